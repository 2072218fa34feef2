// One webhook list (api/webhooks.ts) for both sides: the install manifest ships exactly it, and
// the controller registers exactly it by URL outside a cluster.
import { juneauWebhooks, type ValidatingWebhook } from '../../../api/webhooks';
import { juneauInstallObjects } from '../../../constructs/shared/install';
import { urlWebhookConfiguration } from '../../../runtime/controller/webhook/registration';

const shipped = (namespace: string, certificates: 'self-managed' | 'cert-manager' = 'self-managed') =>
  (juneauInstallObjects({ namespace, certificates, includeCrds: false }).find(
    (o) => o.kind === 'ValidatingWebhookConfiguration',
  )?.webhooks ?? []) as ValidatingWebhook[];

describe('the webhook list', () => {
  test.each(['juneau-system', 'other-ns'])(
    "the install manifest in namespace %s ships api/webhooks.ts's list unchanged",
    (namespace) => {
      expect(shipped(namespace)).toEqual(juneauWebhooks(namespace));
      expect(shipped(namespace, 'cert-manager')).toEqual(juneauWebhooks(namespace));
    },
  );

  test("the namespace reaches the controller identity (SLB-1) and the Pod webhook's namespaceSelector (EIP-5)", () => {
    const [slb, pods] = ['serviceloadbalancers', 'pods'].map((n) =>
      juneauWebhooks('other-ns').find((w) => w.name.startsWith(`${n}.`))!,
    );
    expect(slb.matchConditions?.[0].expression).toContain('system:serviceaccount:other-ns:juneau-controller');
    expect(pods.namespaceSelector?.matchExpressions?.[0].values).toEqual(['kube-system', 'other-ns']);
    expect(pods.failurePolicy).toBe('Ignore');
  });

  test("the controller's URL registration is the same list with a URL clientConfig", () => {
    const config = urlWebhookConfiguration({
      urlBase: 'https://127.0.0.1:9443',
      caBundle: 'pem',
      namespace: 'other-ns',
    });
    const strip = (w: ValidatingWebhook) => ({ ...w, clientConfig: undefined });
    expect(config.webhooks?.map(strip)).toEqual(shipped('other-ns').map(strip));
  });
});
