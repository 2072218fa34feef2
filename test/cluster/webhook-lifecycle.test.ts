// The webhook's life on a real API server: EN-5 (sharing from before the webhook existed), the
// certificate Secret deleted under a running webhook, and the failure mode with the server down.
//
// Failure mode (documented here and in the report): Juneau's kinds have failurePolicy Fail, so
// while no replica answers, creating or updating them is refused ("failed calling webhook"); Pods
// without a Juneau annotation never reach the webhook (matchConditions) and start as usual; Pods
// naming an ElasticIP follow the pods webhook's failurePolicy from api/webhooks.ts.
// Timeouts: 5 s per call (timeoutSeconds in the install manifest); a stopped process is refused at
// once (connection refused), a hung one costs the client up to 5 s before the refusal.
import { JuneauResources } from '../../runtime/kube/resources';
import { X509Certificate } from 'node:crypto';
import { ANNOTATIONS } from '../../api';
import { juneauWebhooks } from '../../api/webhooks';
import {
  ensureCaBundle,
  ValidatingWebhookConfigurationResource,
  type ValidatingWebhookConfiguration,
} from '../../runtime/controller/webhook/registration';
import { splitPem } from '../../runtime/controller/webhook/certificates';
import {
  certificatesFromSecret,
  SecretResource,
  type SecretObject,
} from '../../runtime/controller/webhook/cert-secret';
import { sleep } from '../sleep';
import { createNamespace, deleteNamespace, ignoreNotFound, testRest, waitFor } from './fixture';
import {
  addressPool,
  apply,
  applyOk,
  deleteClusterObjects,
  externalNetwork,
  pod,
  randomId,
  randomSubnet,
  startTestWebhook,
  WEBHOOK_LABEL,
  type TestWebhook,
} from './webhook-fixture';

const net = randomSubnet();
const u = randomId();
const name = (s: string) => `${s}-${u}`;
const pools: string[] = [];
const networks: string[] = [];

afterAll(async () => {
  await deleteClusterObjects(JuneauResources.externalNetworks, networks);
  await deleteClusterObjects(JuneauResources.addressPools, pools);
});

describe('EN-5: pools shared before the webhook existed', () => {
  const id = `en5-${u}`;
  const L = { [WEBHOOK_LABEL]: id };
  let webhook: TestWebhook | undefined;
  afterAll(async () => {
    await webhook?.stop();
  });

  test('EN-5: the sharing stays, every later update of a sharing network is refused, deleting one ends it', async () => {
    // No webhook for `id` yet: the API server accepts two networks sharing one pool.
    pools.push(name('shared'), name('extra'));
    await applyOk(addressPool(name('shared'), [`${net}0/28`], L));
    await applyOk(addressPool(name('extra'), [`${net}16/28`], L));
    networks.push(name('net-a'), name('net-b'));
    // net-a carries a finalizer, so that later its deletion takes a while (and its last update happens while deleting).
    await applyOk({
      ...externalNetwork(name('net-a'), [name('shared')], L),
      metadata: { name: name('net-a'), labels: L, finalizers: ['juneau.test/hold'] },
    });
    await applyOk(externalNetwork(name('net-b'), [name('shared')], L));

    webhook = await startTestWebhook('en5', {}, id);
    // Both still exist (EN-5: they "stay as they are").
    const rest = testRest();
    await rest.get(JuneauResources.externalNetworks, undefined, name('net-a'));

    // Any update: a label only ...
    const relabel = await apply({
      ...externalNetwork(name('net-a'), [name('shared')], L),
      metadata: { name: name('net-a'), labels: { ...L, team: 'x' } },
    });
    expect(relabel.ok).toBe(false);
    expect(relabel.output).toContain(`"${name('shared')}" is already listed by ExternalNetwork ${name('net-b')}`);
    expect(relabel.output).toContain(
      `no update of ExternalNetwork ${name('net-a')} is accepted until one of them is deleted (EN-5)`,
    );
    // ... or appending an unrelated pool, on the other network.
    const append = await apply(externalNetwork(name('net-b'), [name('shared'), name('extra')], L));
    expect(append.ok).toBe(false);
    expect(append.output).toContain(`is already listed by ExternalNetwork ${name('net-a')}`);

    // Deleting one is allowed ...
    await rest.delete(JuneauResources.externalNetworks, undefined, name('net-a'));
    // ... it holds the pool while deleting (EN-4), so B is still refused ...
    expect((await apply(externalNetwork(name('net-b'), [name('shared'), name('extra')], L))).ok).toBe(false);
    // ... removing its finalizer is an update of a sharing network too, allowed because it is deleting ...
    await rest.patch(JuneauResources.externalNetworks, undefined, name('net-a'), 'merge', {
      metadata: { finalizers: null },
    });
    // ... and once it is gone, B can be updated again.
    await waitFor(async () => (await apply(externalNetwork(name('net-b'), [name('shared'), name('extra')], L))).ok, {
      what: 'net-b accepted after net-a is gone',
      timeoutMs: 10_000,
    });
  });
});

describe('certificates and failure mode', () => {
  let webhook: TestWebhook;
  let L: Record<string, string>;
  let ns: string;
  beforeAll(async () => {
    webhook = await startTestWebhook('life');
    L = webhook.labels;
    ns = await createNamespace('webhook-life');
  });
  afterAll(async () => {
    await webhook?.stop();
    await deleteNamespace(ns);
  });

  const readSecret = () => webhook.rest.get<SecretObject>(SecretResource, webhook.namespace, webhook.secretName);
  const registeredCa = async () => {
    const config = await webhook.rest.get<ValidatingWebhookConfiguration>(
      ValidatingWebhookConfigurationResource,
      undefined,
      webhook.configurationName,
    );
    return Buffer.from(config.webhooks?.[0].clientConfig.caBundle ?? '', 'base64').toString('utf8');
  };

  test('the Secret holds the CA and a serving certificate for the URL host; caBundle is the CA', async () => {
    const material = certificatesFromSecret(await readSecret());
    expect(new X509Certificate(material.tlsCert).checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(await registeredCa()).toBe(material.caBundle);
  });

  test('rotation: the Secret deleted under a running webhook is recreated, caBundle follows, and no valid request is refused meanwhile', async () => {
    const before = certificatesFromSecret(await readSecret());
    let refused = 0;
    let accepted = 0;
    let stop = false;
    const traffic = (async () => {
      for (let i = 0; !stop; i++) {
        const n = `rot-${u}-${i}`;
        pools.push(n);
        const r = await apply(addressPool(n, [`${net}${100 + (i % 100)}/32`], L));
        if (r.ok) accepted++;
        else refused++;
        await deleteClusterObjects(JuneauResources.addressPools, [n]);
        await sleep(100);
      }
    })();
    // Traffic flows under the old certificate before the Secret goes (on a loaded machine the
    // first request can take longer than the whole rotation).
    await waitFor(() => accepted >= 2, { what: 'requests accepted under the old certificate', timeoutMs: 20_000 });
    const started = Date.now();
    await webhook.rest.delete(SecretResource, webhook.namespace, webhook.secretName);
    const after = await waitFor(
      async () => {
        const m = certificatesFromSecret(await readSecret());
        return m.caCert !== before.caCert && (await registeredCa()) === m.caBundle ? m : undefined;
      },
      { what: 'a new Secret and caBundle', timeoutMs: 20_000 },
    );
    const recoveredMs = Date.now() - started;
    // Keep calling after the switch, until requests have been accepted under the new certificate.
    const acceptedAtSwitch = accepted;
    await waitFor(() => webhook.handle.isReady() && accepted >= acceptedAtSwitch + 5, {
      what: 'five requests accepted after the switch',
      timeoutMs: 20_000,
    });
    stop = true;
    await traffic;
    expect(splitPem(after.caBundle)).toEqual([after.caCert.trim(), before.caCert.trim()]);
    expect(refused).toBe(0);
    console.log(
      `webhook certificate Secret recreated and caBundle updated ${recoveredMs} ms after deletion; ${accepted} valid requests accepted, ${refused} refused`,
    );
  });

  test('failure mode: with the webhook down, Juneau kinds are refused (Fail) and ordinary Pods still start', async () => {
    await webhook.stop({ keepRegistration: true });
    try {
      const down = await apply(addressPool(name('down'), [`${net}240/30`], L));
      expect(down.ok).toBe(false);
      expect(down.output).toContain('failed calling webhook "addresspools.juneau.loutres.me"');
      expect((await apply(pod(ns, 'ordinary', {}, L))).ok).toBe(true);
      // The Pods webhook fails open (a controller outage must not stop workloads): the registration
      // the API server holds says Ignore, and a Pod that does reach the webhook is created.
      const registered = await webhook.rest.get<ValidatingWebhookConfiguration>(
        ValidatingWebhookConfigurationResource,
        undefined,
        webhook.configurationName,
      );
      expect(registered.webhooks?.find((w) => w.name.startsWith('pods.'))?.failurePolicy).toBe('Ignore');
      const annotated = await apply(pod(ns, 'with-eip', { [ANNOTATIONS.elasticIP]: 'eip-x' }, L));
      expect(annotated).toMatchObject({ ok: true, output: expect.stringContaining('pod/with-eip created') });
    } finally {
      await webhook.restart();
    }
    pools.push(name('up'));
    expect((await apply(addressPool(name('up'), [`${net}244/30`], L))).ok).toBe(true);
  });
});

describe('caBundle patching (in-cluster mode)', () => {
  test('ensureCaBundle writes the CA into every webhook of an installed configuration once', async () => {
    const webhook = await startTestWebhook('cabundle');
    const rest = webhook.rest;
    const configName = `juneau-test-cabundle-${u}`;
    try {
      const webhooks = juneauWebhooks().map((w) => ({
        ...w,
        clientConfig: { url: `${webhook.urlBase}${w.clientConfig.service?.path}` },
        objectSelector: { matchLabels: { 'juneau.test/none': u } },
      }));
      await rest.create(ValidatingWebhookConfigurationResource, {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: configName },
        webhooks,
      });
      const material = certificatesFromSecret(
        await rest.get<SecretObject>(SecretResource, webhook.namespace, webhook.secretName),
      );
      expect(await ensureCaBundle(rest, configName, material.caBundle)).toBe('patched');
      expect(await ensureCaBundle(rest, configName, material.caBundle)).toBe('unchanged');
      const config = await rest.get<ValidatingWebhookConfiguration>(
        ValidatingWebhookConfigurationResource,
        undefined,
        configName,
      );
      expect(
        config.webhooks?.every((w) => w.clientConfig.caBundle === Buffer.from(material.caBundle).toString('base64')),
      ).toBe(true);
    } finally {
      await rest.delete(ValidatingWebhookConfigurationResource, undefined, configName).catch(ignoreNotFound);
      await webhook.stop();
    }
  });
});
