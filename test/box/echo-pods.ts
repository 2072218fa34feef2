// Echo pods for the NAT box tests (test/box/nat-*.test.ts): a bare Pod of the echo image
// (scripts/images/echo.ts) pinned to a node, its readiness, and Node.js run inside it to open a
// connection from the pod's own network stack.
import { ECHO_HTTP_PORT, ECHO_IMAGE } from '../../scripts/images/echo';
import { sleep } from '../sleep';
import type { Kubectl } from './session';

/** A bare echo Pod pinned to `node`. */
export function echoPod(name: string, node: string, annotations: Record<string, string>): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', annotations, labels: { app: name } },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'echo',
          image: ECHO_IMAGE,
          imagePullPolicy: 'Never',
          env: [
            { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
            { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
          ],
          ports: [{ containerPort: ECHO_HTTP_PORT, protocol: 'TCP' }],
          readinessProbe: { tcpSocket: { port: ECHO_HTTP_PORT }, periodSeconds: 1 },
        },
      ],
    },
  });
}

export interface PodJson {
  spec: { nodeName: string };
  status: { phase: string; podIP?: string; containerStatuses?: Array<{ ready: boolean }> };
}

/** Polls `probe` until it returns a value; throws naming `what` after `timeoutMs`. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 120_000): Promise<T> {
  for (const end = Date.now() + timeoutMs; ; await sleep(200)) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
  }
}

/** The pod `name`, once Running and ready. */
export function runningPod(kubectl: Kubectl, name: string): Promise<PodJson> {
  return until(`pod ${name} Ready`, async () => {
    const p = JSON.parse(await kubectl(['get', 'pod', name, '-o', 'json'])) as PodJson;
    return p.status.phase === 'Running' && p.status.containerStatuses?.[0]?.ready ? p : undefined;
  });
}

/**
 * One HTTP(S) GET by the echo image's Node.js in pod `name`: the body (`body`) or the status line
 * (`status`: `status=NNN`, any answer; the certificate is not checked), or `ERROR <why>` when no
 * answer came within 5 s.
 */
export async function getFromPod(kubectl: Kubectl, name: string, url: string, print: 'body' | 'status' = 'body') {
  const module = url.startsWith('https:') ? 'node:https' : 'node:http';
  const onAnswer =
    print === 'body'
      ? '(res) => res.pipe(process.stdout)'
      : // The answer is all this wants: the socket's idle timeout must not fire after it.
        "(res) => { console.log('status=' + res.statusCode); process.exit(0); }";
  return (
    await kubectl([
      'exec',
      name,
      '--',
      'node',
      '-e',
      `const r = require('${module}').get(${JSON.stringify(url)}, { timeout: 5000, rejectUnauthorized: false }, ${onAnswer});
r.on('timeout', () => r.destroy(new Error('no answer within 5 s'))).on('error', (e) => console.log('ERROR ' + e.message));`,
    ])
  ).trim();
}
