// M1: any pod can reach the admission server's port, and the webhooks fail closed. Two parts:
// - the real AdmissionServer over TLS on loopback, flooded by one client: bodies declared larger
//   than the cap are refused on their Content-Length before a byte of them is read, and past
//   maxInFlight requests the next ones are answered 429 at once, so what the flood makes the
//   server hold stays bounded; it still answers afterwards;
// - the real API server with the ARPAdvertisement webhook registered and down (a flooded or dead
//   controller answers nothing): the controller's own writes (create, then a move of spec.nodeName)
//   still go through, because its ServiceAccount is exempt from that webhook; another writer's
//   move fails calling it, which shows the webhook is registered and matches.
import * as https from 'node:https';
import * as YAML from 'yaml';
import { allowed } from '../../runtime/controller/webhook/admission';
import { issueCertificates, type WebhookCertificates } from '../../runtime/controller/webhook/certificates';
import { AdmissionServer, MAX_BODY_BYTES } from '../../runtime/controller/webhook/server';
import type { WebhookCaches } from '../../runtime/controller/webhook/views';
import { INSTALL } from '../../api';
import { writeAdvertisement } from '../../runtime/controller/arp/owned';
import { ClaimNotHeldError } from '../../runtime/controller/arp/claim-guard';
import { arpAdvertisementAdmitter } from '../../runtime/controller/webhook/handlers';
import { liveWebhookCaches } from '../../runtime/controller/webhook/listers';
import { JuneauResources } from '../../runtime/kube/resources';
import {
  createArpNetwork,
  deleteArpNetwork,
  deleteNodes,
  ensureNode,
  kubectl,
  rejection,
  testRest,
  waitFor,
} from './fixture';
import { arpAdvertisement, randomId, startTestWebhook, type TestWebhook } from './webhook-fixture';

const MIB = 1024 * 1024;

interface Outcome {
  status: number;
  at: number;
}

describe('SEC-6 a flooded or absent webhook neither grows without bound nor stops the controller', () => {
  let material: WebhookCertificates;
  let server: AdmissionServer;
  let port: number;
  /** Requests the handler has started; each waits for `release` (keeps its in-flight slot). */
  let started = 0;
  let release: () => void = () => undefined;
  let released = new Promise<void>((resolve) => (release = resolve));

  beforeAll(async () => {
    material = await issueCertificates(['127.0.0.1']);
    server = new AdmissionServer({
      host: '127.0.0.1',
      port: 0,
      caches: { hasSynced: () => true } as unknown as WebhookCaches,
      handlers: {
        '/flood': async () => {
          started++;
          await released;
          return allowed();
        },
      },
    });
    port = await server.listen({ cert: material.tlsCert, key: material.tlsKey });
  });
  afterAll(() => server.close());

  /** One POST of `declared` bytes; sends `sent` of them now, the rest when `finish` resolves. */
  const post = (declared: number, sent: number, finish: Promise<void>) => {
    const t0 = Date.now();
    return new Promise<Outcome>((resolve, reject) => {
      const req = https.request(
        {
          host: '127.0.0.1',
          port,
          path: '/flood',
          method: 'POST',
          ca: material.caBundle,
          agent: false,
          headers: { 'Content-Type': 'application/json', 'Content-Length': declared },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, at: Date.now() - t0 }));
        },
      );
      req.on('error', (err) => (req.writableEnded ? undefined : reject(err)));
      const review = JSON.stringify({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: { uid: 'u', operation: 'CREATE', object: { pad: '' } },
      });
      // Padding after the JSON: valid, and the rest is only allocated once it is sent.
      const head = Buffer.alloc(sent, ' ');
      head.write(review, 0);
      req.write(head);
      void finish.then(() => {
        if (!req.destroyed) req.end(Buffer.alloc(declared - sent, ' '));
      });
    });
  };

  it('SEC-6: 60 bodies declared at 8 MiB are refused 413 unread; of 60 slow 2.9 MiB bodies, 32 are held and 28 answered 429 at once; the server answers afterwards', async () => {
    const never = new Promise<void>(() => undefined);
    const huge = await Promise.all(Array.from({ length: 60 }, () => post(8 * MIB, 64 * 1024, never)));
    expect(new Set(huge.map((o) => o.status))).toEqual(new Set([413]));
    expect(8 * MIB).toBeGreaterThan(MAX_BODY_BYTES);

    // Slow senders: 64 KiB now, the rest only once the test lets them finish.
    let finishAll: () => void = () => undefined;
    const finish = new Promise<void>((resolve) => (finishAll = resolve));
    const size = Math.floor(2.9 * MIB);
    const outcomes: Outcome[] = [];
    const slow = Array.from({ length: 60 }, () => post(size, 64 * 1024, finish).then((o) => (outcomes.push(o), o)));
    await waitFor(() => outcomes.length === 28, { what: '28 answered while 32 are held', timeoutMs: 15_000 });
    expect(outcomes.every((o) => o.status === 429)).toBe(true);
    expect(server.refused).toBe(60 + 28);
    // Bounded: no more than maxInFlight (32) requests are read at once, whatever the client opens.

    // The held ones complete once their bodies arrive and the handler answers.
    finishAll();
    await waitFor(() => started === 32, { what: 'the 32 held requests reach the handler', timeoutMs: 15_000 });
    release();
    const all = await Promise.all(slow);
    expect(all.filter((o) => o.status === 200)).toHaveLength(32);
    expect(all.filter((o) => o.status === 429)).toHaveLength(28);

    // And the next request is served as usual.
    released = Promise.resolve();
    expect((await post(1024, 1024, Promise.resolve())).status).toBe(200);
  });

  describe('with the ARPAdvertisement webhook registered and not answering', () => {
    let webhook: TestWebhook;
    let controller: string;
    const binding = () => `sec6-${webhook.id}`;
    beforeAll(async () => {
      webhook = await startTestWebhook('sec6');
      controller = `system:serviceaccount:${webhook.namespace}:${INSTALL.controllerName}`;
      // RBAC as the install gives the controller (here: all of it); the webhook exemption is by identity.
      await kubectl(['create', 'clusterrolebinding', binding(), '--clusterrole=cluster-admin', `--user=${controller}`]);
      await webhook.stop({ keepRegistration: true });
    });
    afterAll(async () => {
      await kubectl(['delete', 'clusterrolebinding', binding(), '--ignore-not-found'], { allowFailure: true });
      await kubectl(['delete', 'validatingwebhookconfiguration', webhook.configurationName, '--ignore-not-found'], {
        allowFailure: true,
      });
      await kubectl(['delete', 'namespace', webhook.namespace, '--ignore-not-found', '--wait=false'], {
        allowFailure: true,
      });
    });

    it("SEC-6: the controller's ServiceAccount creates and moves an ARPAdvertisement while the webhook answers nothing; another writer's move fails calling it", async () => {
      const name = `sec6-${randomId()}`;
      const address = `100.${64 + Math.floor(Math.random() * 64)}.${Math.floor(Math.random() * 256)}.7`;
      const ad = arpAdvertisement(name, address, 'ext-sec6', webhook.labels, 'node-a');
      const created = await kubectl([`--as=${controller}`, 'create', '-f', '-'], {
        input: YAML.stringify(ad),
        allowFailure: true,
      });
      try {
        expect(created).toMatchObject({ code: 0 });
        const move = (node: string) => [
          'patch',
          'arpadvertisement',
          name,
          '--type=merge',
          '-p',
          `{"spec":{"nodeName":"${node}"}}`,
        ];
        const other = await kubectl(['--as=alice', '--as-group=system:masters', ...move('node-c')], {
          allowFailure: true,
        });
        expect(other.code).not.toBe(0);
        expect(other.stderr).toContain('failed calling webhook');
        const moved = await kubectl([`--as=${controller}`, ...move('node-b')], { allowFailure: true });
        expect(moved).toMatchObject({ code: 0 });
        const stored = await kubectl(['get', 'arpadvertisement', name, '-o', 'jsonpath={.spec.nodeName}']);
        expect(stored.stdout).toBe('node-b');
      } finally {
        await kubectl(['delete', 'arpadvertisement', name, '--ignore-not-found'], { allowFailure: true });
      }
    });
  });

  it("SEC-6: the controller's own create, which skips the webhook, is checked in-process first: a Node's InternalIP is refused (ARP-5) before any write", async () => {
    const rest = testRest();
    const id = randomId();
    const base = `100.${64 + Math.floor(Math.random() * 64)}.${Math.floor(Math.random() * 256)}`;
    const node = `sec6-node-${id}`;
    await createArpNetwork(rest, { pool: `sec6-${id}`, network: `sec6-${id}`, addresses: [`${base}.0/28`] });
    await ensureNode(node, { internalIP: `${base}.3` });
    const ctx = {
      rest,
      fieldManager: 'juneau-controller',
      admitAdvertisement: arpAdvertisementAdmitter(liveWebhookCaches(rest)),
    };
    const owner = { kind: 'ElasticIP' as const, namespace: 'default', name: `sec6-${id}` };
    const holder = { kind: 'ElasticIP', namespace: 'default', name: `sec6-${id}` };
    const desired = (address: string) => ({
      name: `sec6-${id}`,
      externalNetwork: `sec6-${id}`,
      address,
      nodeName: node,
    });
    try {
      await expect(writeAdvertisement(ctx, owner, holder, undefined, desired(`${base}.3`))).rejects.toThrow(
        `not creating ARPAdvertisement sec6-${id}: spec.address: "${base}.3" is the InternalIP of Node ${node}: answering ARP for it would cut the node off (ARP-5)`,
      );
      // Positive control: another address of the pool passes the check and reaches the claim guard
      // (no claim is held here, so that one refuses it: ARP-4, ALLOC-1).
      await expect(writeAdvertisement(ctx, owner, holder, undefined, desired(`${base}.4`))).rejects.toBeInstanceOf(
        ClaimNotHeldError,
      );
      expect((await rejection(rest.get(JuneauResources.arpAdvertisements, undefined, `sec6-${id}`))).code).toBe(404);
    } finally {
      await deleteNodes([node]);
      await deleteArpNetwork(rest, { pool: `sec6-${id}`, network: `sec6-${id}` });
    }
  });
});
