/**
 * The task guides of docs/guides/ as a test runs them: each page's sections, and in each the fenced
 * code blocks in order. A `yaml` block whose first line is `# file: NAME` is a file the reader
 * saves; a `sh` block is commands the reader runs, on a machine with kubectl unless its first line
 * is `# on a machine on the nodes' segment`. Other blocks (output shown, `kubectl get` views) are
 * not run.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { REPO_ROOT } from '../cluster/paths';

export const GUIDES_DIR = path.join(REPO_ROOT, 'docs', 'guides');
export const ON_SEGMENT = "# on a machine on the nodes' segment";

export type GuideStep =
  | { readonly kind: 'file'; readonly name: string; readonly text: string }
  | { readonly kind: 'sh'; readonly where: 'kubectl' | 'segment'; readonly script: string };

export interface GuideSection {
  /** The `##` heading, or '' for what comes before the first one. */
  readonly heading: string;
  readonly steps: GuideStep[];
}

/** The sections of a guide page and the steps in each, in page order. */
export function guideSections(markdown: string): GuideSection[] {
  const sections: GuideSection[] = [{ heading: '', steps: [] }];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const heading = /^## (.+)$/.exec(lines[i]);
    if (heading) {
      sections.push({ heading: heading[1].trim(), steps: [] });
      continue;
    }
    const fence = /^```(\w*)\s*$/.exec(lines[i]);
    if (!fence) continue;
    const end = lines.indexOf('```', i + 1);
    if (end < 0) throw new Error(`guide: the code block opened on line ${i + 1} is never closed`);
    const body = lines.slice(i + 1, end);
    i = end;
    const steps = sections[sections.length - 1].steps;
    const file = /^# file: (\S+)$/.exec(body[0] ?? '');
    if (fence[1] === 'yaml' && file) steps.push({ kind: 'file', name: file[1], text: body.slice(1).join('\n') + '\n' });
    else if (fence[1] === 'sh')
      steps.push({ kind: 'sh', where: body[0] === ON_SEGMENT ? 'segment' : 'kubectl', script: body.join('\n') + '\n' });
  }
  return sections;
}

/** The guide `name` (a file of docs/guides) read from the page. */
export const readGuide = (name: string): GuideSection[] =>
  guideSections(fs.readFileSync(path.join(GUIDES_DIR, name), 'utf8'));
