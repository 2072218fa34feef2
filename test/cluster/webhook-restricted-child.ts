// The controller's webhook start as a process of its own, for webhook-restricted.test.ts, which
// bundles it like scripts/bundle.mjs bundles the controller and runs it as uid 65532 with Node's
// permission model (no file writes, no child processes), no `openssl` on PATH and HOME/TMPDIR
// that do not exist. Configuration in JUNEAU_CHILD (JSON); prints `READY <port>` once the webhook
// serves with a CA the API server trusts, and stops (removing its registration) on SIGTERM.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { liveWebhookCaches } from '../../runtime/controller/webhook/listers';
import { startWebhookServer } from '../../runtime/controller/webhook/start';
import { loadKubeConfig } from '../../runtime/kube/kubeconfig';
import { createLogger } from '../../runtime/kube/log';
import { RestClient } from '../../runtime/kube/rest';

interface ChildConfig {
  readonly kubeconfig: string;
  readonly urlBase: string;
  readonly namespace: string;
  readonly configurationName: string;
  readonly secretName: string;
  readonly selector: Record<string, string>;
}

/** What this process may do, as it finds out by trying: printed for the test to check its setup. */
function restrictions(): Record<string, unknown> {
  const attempt = (fn: () => unknown) => {
    try {
      fn();
      return 'allowed';
    } catch (err) {
      return (err as NodeJS.ErrnoException).code ?? String(err);
    }
  };
  return {
    uid: process.getuid?.(),
    writeTmp: attempt(() => fs.writeFileSync(path.join('/tmp', `juneau-probe-${process.pid}`), 'x')),
    mkdtemp: attempt(() => fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-probe-'))),
    openssl: attempt(() => {
      const r = spawnSync('openssl', ['version']);
      if (r.error) throw r.error;
    }),
  };
}

async function main(): Promise<void> {
  const c = JSON.parse(process.env.JUNEAU_CHILD ?? '') as ChildConfig;
  process.stdout.write(`RESTRICTIONS ${JSON.stringify(restrictions())}\n`);
  const { kubeConfig } = loadKubeConfig({ kubeconfigPath: c.kubeconfig });
  const rest = new RestClient(kubeConfig);
  const handle = startWebhookServer({
    rest,
    caches: liveWebhookCaches(rest),
    logger: createLogger({ component: 'restricted-webhook', level: 'info' }),
    urlBase: c.urlBase,
    inCluster: false,
    namespace: c.namespace,
    configurationName: c.configurationName,
    certSecretName: c.secretName,
    objectSelector: { matchLabels: c.selector },
    checkIntervalMs: 1_000,
  });
  process.once('SIGTERM', () => {
    void handle.stop().then(
      () => process.exit(0),
      (err: Error) => {
        process.stderr.write(`stop failed: ${err.message}\n`);
        process.exit(1);
      },
    );
  });
  await handle.ready;
  process.stdout.write(`READY ${handle.port()}\n`);
}

main().catch((err: Error) => {
  process.stderr.write(`child failed: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
