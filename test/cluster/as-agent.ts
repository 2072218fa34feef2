// One request as the Juneau agent's ServiceAccount on a node, by impersonation headers with the
// user extra a pod's bound token carries (`authentication.kubernetes.io/node-name`), as the
// kubelet's token for a pod on that node would; kubectl has no flag for a user extra.
import * as https from 'node:https';
import { INSTALL } from '../../api';
import { testKubeConfig } from './fixture';

export const AGENT_USER = `system:serviceaccount:${INSTALL.namespace}:${INSTALL.agentName}`;

/** `node` undefined: a token without a node. Resolves with the status and the body's message. */
export async function asAgent(
  node: string | undefined,
  method: string,
  path: string,
  body?: object,
  contentType = 'application/json',
): Promise<{ code: number; message: string }> {
  const kc = testKubeConfig();
  const server = new URL(kc.getCurrentCluster()!.server);
  const opts: https.RequestOptions = {
    method,
    hostname: server.hostname,
    port: server.port,
    path,
    headers: {
      'Content-Type': contentType,
      'Impersonate-User': AGENT_USER,
      'Impersonate-Group': [
        'system:serviceaccounts',
        `system:serviceaccounts:${INSTALL.namespace}`,
        'system:authenticated',
      ],
      ...(node ? { 'Impersonate-Extra-authentication.kubernetes.io%2fnode-name': node } : {}),
    },
  };
  await kc.applyToHTTPSOptions(opts);
  return new Promise((resolve, reject) => {
    const req = https.request(opts, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => {
        let message = text;
        try {
          message = (JSON.parse(text || '{}') as { message?: string }).message ?? '';
        } catch {
          // Not a Status (the API server's plain `404 page not found`): the text itself.
        }
        resolve({ code: res.statusCode ?? 0, message });
      });
    });
    req.on('error', reject);
    req.end(body ? JSON.stringify(body) : undefined);
  });
}
