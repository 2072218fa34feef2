// JuneauInstall's `image` option: the default is the reference `npm run images` writes into its
// archive (one constant, DEFAULT_IMAGE), a user who pushed the archive elsewhere points both
// containers there, and bad values fail synthesis naming the field. (The Pulumi JuneauInstall
// renders and validates through the same functions; pulumi-components.test.ts checks its error.)
import { Chart } from 'cdk8s';
import * as YAML from 'yaml';
import { JuneauInstall, type JuneauImageOptions } from '../../../constructs/cdk8s';
import { DEFAULT_IMAGE } from '../../../constructs/shared/image';
import { juneauImageReference } from '../../../scripts/images/juneau';
import { testApp } from '../temp-dir';

const VERSION = (require('../../../package.json') as { version: string }).version;

type Container = { name: string; image: string; imagePullPolicy: string };
function containers(image?: JuneauImageOptions): Container[] {
  const app = testApp();
  new JuneauInstall(new Chart(app, 'c'), 'juneau', { includeCrds: false, image });
  return YAML.parseAllDocuments(app.synthYaml())
    .map((d) => d.toJSON() as { spec?: { template?: { spec: { containers: Container[] } } } })
    .flatMap((o) => o?.spec?.template?.spec.containers ?? []);
}

function synthError(image: unknown): string {
  const app = testApp();
  new JuneauInstall(new Chart(app, 'c'), 'juneau', { image: image as JuneauImageOptions });
  try {
    app.synthYaml();
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('synth succeeded but was expected to fail');
}

test("default: ghcr.io/loutres/juneau:v<version>, IfNotPresent, for the controller and the agent — the archive's own name", () => {
  expect(DEFAULT_IMAGE).toEqual({ registry: 'ghcr.io', repository: 'loutres/juneau' });
  const expected = `ghcr.io/loutres/juneau:v${VERSION}`;
  expect(juneauImageReference(VERSION)).toBe(expected);
  expect(containers()).toEqual([
    expect.objectContaining({ name: 'controller', image: expected, imagePullPolicy: 'IfNotPresent' }),
    expect.objectContaining({ name: 'agent', image: expected, imagePullPolicy: 'IfNotPresent' }),
  ]);
});

test("a registry of the user's, and each part on its own", () => {
  expect(containers({ registry: 'registry.example:5000' }).map((c) => c.image)).toEqual([
    `registry.example:5000/loutres/juneau:v${VERSION}`,
    `registry.example:5000/loutres/juneau:v${VERSION}`,
  ]);
  expect(
    containers({ registry: '', repository: 'juneau', tag: 'dev', pullPolicy: 'Never' }).map(
      (c) => `${c.image} ${c.imagePullPolicy}`,
    ),
  ).toEqual(['juneau:dev Never', 'juneau:dev Never']);
});

test.each<[string, unknown, string]>([
  [
    'a plain reference string (the option before it became an object)',
    'ghcr.io/x/y:1',
    'image: "ghcr.io/x/y:1" must be an object { registry?, repository?, tag?, pullPolicy? }',
  ],
  [
    'a scheme in the registry',
    { registry: 'https://registry.example' },
    'image.registry: "https://registry.example" must be a registry host[:port]',
  ],
  [
    'upper case in the repository',
    { repository: 'Loutres/Juneau' },
    'image.repository: "Loutres/Juneau" must be lower-case path components',
  ],
  ['a tag starting with "-"', { tag: '-x' }, 'image.tag: "-x" must be 1-128 letters'],
  [
    'an unknown pull policy',
    { pullPolicy: 'Sometimes' },
    'image.pullPolicy: "Sometimes" must be Always, IfNotPresent or Never',
  ],
])('refused: %s', (_, image, message) => {
  expect(synthError(image)).toContain(message);
});
