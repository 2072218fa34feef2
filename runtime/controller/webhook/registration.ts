/**
 * The ValidatingWebhookConfiguration: in a cluster the install manifest creates it and the
 * controller only keeps `caBundle` up to date; outside a cluster (`--webhook-url-base`) the
 * controller registers the same webhooks (names, rules, matchConditions, failurePolicy, timeouts
 * from api/webhooks.ts, the list the install manifest ships) with `clientConfig.url` and its own CA.
 */
import { createHash } from 'node:crypto';
import { GROUP, INSTALL, juneauWebhooks, type LabelSelector, type ValidatingWebhook } from '../../../api';
import {
  deleteIgnoringNotFound,
  getOrUndefined,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type RestClient,
} from '../../kube/rest';
import type { ResourceType } from '../../kube/resources';
import type { KubeObject } from '../../kube/types';

export const ValidatingWebhookConfigurationResource: ResourceType = {
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  plural: 'validatingwebhookconfigurations',
  kind: 'ValidatingWebhookConfiguration',
  namespaced: false,
};

export interface ValidatingWebhookConfiguration extends KubeObject {
  webhooks?: ValidatingWebhook[];
}

const HASH_ANNOTATION = `${GROUP}/registration-hash`;

export interface UrlRegistrationOptions {
  /** @default INSTALL.webhookConfigurationName */
  readonly name?: string;
  /** `https://127.0.0.1:9443`: each webhook is served at this base + its path. */
  readonly urlBase: string;
  /** PEM bundle the API server trusts for this URL. */
  readonly caBundle: string;
  readonly namespace?: string;
  /**
   * Narrows every webhook to objects with these labels (tests on a shared control plane).
   * Unset: the install manifest's selectors as they are.
   */
  readonly objectSelector?: LabelSelector;
}

/** The install manifest's webhooks, served by URL with this CA. */
export function urlWebhookConfiguration(o: UrlRegistrationOptions): ValidatingWebhookConfiguration {
  const base = o.urlBase.replace(/\/+$/, '');
  const caBundle = Buffer.from(o.caBundle, 'utf8').toString('base64');
  const webhooks = juneauWebhooks(o.namespace).map((w) => ({
    ...w,
    clientConfig: { url: `${base}${w.clientConfig.service?.path ?? ''}`, caBundle },
    ...(o.objectSelector ? { objectSelector: o.objectSelector } : {}),
  }));
  const hash = createHash('sha256').update(JSON.stringify(webhooks)).digest('hex').slice(0, 16);
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: {
      name: o.name ?? INSTALL.webhookConfigurationName,
      labels: { 'app.kubernetes.io/part-of': 'juneau', 'app.kubernetes.io/managed-by': 'juneau-controller' },
      annotations: { [HASH_ANNOTATION]: hash },
    },
    webhooks,
  };
}

/** Creates the configuration, or replaces it when what it registers differs. */
export async function ensureUrlRegistration(
  rest: RestClient,
  desired: ValidatingWebhookConfiguration,
): Promise<'created' | 'replaced' | 'unchanged'> {
  const name = desired.metadata?.name ?? '';
  for (let attempt = 0; attempt < 5; attempt++) {
    const current = await getOrUndefined<ValidatingWebhookConfiguration>(
      rest,
      ValidatingWebhookConfigurationResource,
      undefined,
      name,
    );
    try {
      if (!current) {
        await rest.create(ValidatingWebhookConfigurationResource, desired);
        return 'created';
      }
      if (current.metadata?.annotations?.[HASH_ANNOTATION] === desired.metadata?.annotations?.[HASH_ANNOTATION])
        return 'unchanged';
      await rest.replace(ValidatingWebhookConfigurationResource, {
        ...desired,
        metadata: { ...desired.metadata, resourceVersion: current.metadata?.resourceVersion },
      });
      return 'replaced';
    } catch (err) {
      if (isAlreadyExists(err) || isConflict(err) || isNotFound(err)) continue;
      throw err;
    }
  }
  throw new Error(`could not register ValidatingWebhookConfiguration ${name}: it kept changing`);
}

/** In a cluster: puts `caBundle` into every webhook of the installed configuration that lacks it. */
export async function ensureCaBundle(
  rest: RestClient,
  name: string,
  caBundlePem: string,
): Promise<'patched' | 'unchanged'> {
  const caBundle = Buffer.from(caBundlePem, 'utf8').toString('base64');
  for (let attempt = 0; attempt < 5; attempt++) {
    const current = await rest.get<ValidatingWebhookConfiguration>(
      ValidatingWebhookConfigurationResource,
      undefined,
      name,
    );
    const webhooks = current.webhooks ?? [];
    if (webhooks.every((w) => w.clientConfig?.caBundle === caBundle)) return 'unchanged';
    const updated = {
      ...current,
      webhooks: webhooks.map((w) => ({ ...w, clientConfig: { ...w.clientConfig, caBundle } })),
    };
    try {
      await rest.replace(ValidatingWebhookConfigurationResource, updated);
      return 'patched';
    } catch (err) {
      if (isConflict(err)) continue;
      throw err;
    }
  }
  throw new Error(`could not write caBundle into ValidatingWebhookConfiguration ${name}: it kept changing`);
}

export async function removeRegistration(rest: RestClient, name: string): Promise<void> {
  await deleteIgnoringNotFound(rest, ValidatingWebhookConfigurationResource, undefined, name);
}
