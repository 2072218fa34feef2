// Jest global setup of the "box" project: what a user builds from this tree before installing
// (`npm run images`, `npx cdk8s synth`) and the echo image, once per run. Every box suite installs
// from these files; built per suite, they cost ~14 s each on an idle machine (of the same tree).
import * as fs from 'node:fs';
import { buildEchoImage } from '../../scripts/images/echo';
import { REPO_ROOT } from '../cluster/paths';
import { buildUserArtifacts, ECHO_ARCHIVE, IMAGE } from './session';

export default async function globalSetup(): Promise<void> {
  const t0 = Date.now();
  buildUserArtifacts();
  fs.writeFileSync(ECHO_ARCHIVE, (await buildEchoImage(REPO_ROOT)).archive);
  process.stderr.write(
    `box: built ${IMAGE}, ${ECHO_ARCHIVE} and dist/ once for every box suite in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`,
  );
}
