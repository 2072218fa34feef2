import { INSTALL } from '../../../api';
import { juneauWebhooks } from '../../../api/webhooks';
import { meta, type ManifestObject, type ResolvedOptions } from './objects';

/**
 * The ValidatingWebhookConfiguration of api/webhooks.ts (the controller registers the same list
 * outside a cluster), plus, with cert-manager, the Issuer and Certificate of its serving certificate.
 */
export function webhookConfiguration(o: ResolvedOptions): ManifestObject[] {
  const annotations =
    o.certificates === 'cert-manager'
      ? { 'cert-manager.io/inject-ca-from': `${o.namespace}/${INSTALL.webhookCertSecretName}` }
      : undefined;
  const objects: ManifestObject[] = [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: {
        ...meta(INSTALL.webhookConfigurationName, undefined, INSTALL.controllerName),
        ...(annotations ? { annotations } : {}),
      },
      webhooks: juneauWebhooks(o.namespace),
    },
  ];
  if (o.certificates === 'cert-manager') {
    objects.push(
      {
        apiVersion: 'cert-manager.io/v1',
        kind: 'Issuer',
        metadata: meta('juneau-selfsigned', o.namespace, INSTALL.controllerName),
        spec: { selfSigned: {} },
      },
      {
        apiVersion: 'cert-manager.io/v1',
        kind: 'Certificate',
        metadata: meta(INSTALL.webhookCertSecretName, o.namespace, INSTALL.controllerName),
        spec: {
          secretName: INSTALL.webhookCertSecretName,
          dnsNames: [
            `${INSTALL.webhookServiceName}.${o.namespace}.svc`,
            `${INSTALL.webhookServiceName}.${o.namespace}.svc.cluster.local`,
          ],
          issuerRef: { name: 'juneau-selfsigned', kind: 'Issuer' },
        },
      },
    );
  }
  return objects;
}
