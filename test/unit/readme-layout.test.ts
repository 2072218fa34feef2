// CONTRIBUTING.md's "Layout" section names every folder it promises to (each top-level folder in git,
// and each folder of runtime/, test/ and bench/) and nothing that is gone.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');
const NESTED = ['runtime', 'test', 'bench'];

/** The folders the Layout block lists: a line's first word ending in `/`, at column 0 or nested by two spaces. */
function listedFolders(readme: string): string[] {
  const section = readme.split('\n## Layout\n')[1];
  if (section === undefined) throw new Error('CONTRIBUTING.md has no "## Layout" section');
  const block = section.split('```')[1];
  return block
    .split('\n')
    .map((line) => /^(?: {2})?([.\w-]+(?:\/[\w-]+)*\/)(?: |$)/.exec(line)?.[1])
    .filter((f): f is string => f !== undefined);
}

/** The folders in git: top-level ones and those directly under runtime/, test/ and bench/. */
function foldersInGit(): string[] {
  const files = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
  const folders = new Set<string>();
  for (const file of files) {
    const parts = file.split('/');
    if (parts.length < 2) continue;
    folders.add(`${parts[0]}/`);
    if (NESTED.includes(parts[0]) && parts.length > 2) folders.add(`${parts[0]}/${parts[1]}/`);
  }
  return [...folders];
}

test('the Layout of CONTRIBUTING.md lists exactly the folders of the tree, each once', () => {
  const listed = listedFolders(fs.readFileSync(path.join(ROOT, 'CONTRIBUTING.md'), 'utf8'));
  expect(new Set(listed).size).toBe(listed.length);
  expect([...listed].sort()).toEqual(foldersInGit().sort());
});
