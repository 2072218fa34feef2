import * as pulumi from '@pulumi/pulumi';
import { ElasticIPAttachment as ElasticIPAttachmentObject } from '../../api';
import { renderElasticIPAttachment, validateElasticIPAttachment } from '../shared/kinds';
import { deferredMetadata, JuneauComponent, JuneauMetadata, knownNow, metadataInput, TYPE_PREFIX } from './base';
import { declarations } from './declarations';
import { ElasticIP } from './elastic-ip';

export interface ElasticIPAttachmentArgs {
  /**
   * Metadata of the attachment; it must be in the ElasticIP's namespace (EIPA-1).
   * @default name = the component's resource name; namespace = the ElasticIP component's namespace, if given
   */
  readonly metadata?: JuneauMetadata;
  /** The ElasticIP to bind: a component, or a name in the same namespace (EIPA-1). */
  readonly elasticIP: ElasticIP | string;
  /**
   * The NetworkInterface to translate to, named `<pod>.<interface>` (NIC-1).
   * @example 'nginx.eth0'
   */
  readonly networkInterface: string;
}

type Spec = ElasticIPAttachmentObject['spec'];
type Status = NonNullable<ElasticIPAttachmentObject['status']>;

/**
 * Binds an ElasticIP to a Pod NIC through 1:1 NAT (EIP-4, EIPA-1, EIPA-2).
 *
 * @example
 * new ElasticIPAttachment('nginx-eip-attach', { elasticIP: nginxEip, networkInterface: 'nginx.eth0' });
 */
export class ElasticIPAttachment extends JuneauComponent<ElasticIPAttachmentObject, Spec, Status> {
  public static readonly TYPE = `${TYPE_PREFIX}:ElasticIPAttachment`;

  /** @throws JuneauValidationError listing every problem of `args` (names, EIPA-1, EIPA-2 within the program). */
  constructor(name: string, args: ElasticIPAttachmentArgs, opts?: pulumi.ComponentResourceOptions) {
    const eip = args.elasticIP;
    const metadata = metadataInput(args.metadata) ?? {};
    const object = renderElasticIPAttachment(args.metadata?.name ?? name, {
      elasticIP: typeof eip === 'string' ? eip : eip.name,
      networkInterface: args.networkInterface,
      metadata: { ...metadata, namespace: metadata.namespace ?? (typeof eip === 'string' ? undefined : eip.namespace) },
    });
    const declared = declarations().elasticIPAttachments;
    // A namespace known only at deployment (the attachment's, or the ElasticIP's it defaults to) is
    // written as it resolves; EIPA-1's namespace comparison is then the cluster's.
    const own = deferredMetadata(args.metadata, true);
    const inherited =
      args.metadata?.namespace === undefined && typeof eip !== 'string' && eip.namespace === undefined
        ? eip.namespaceInput
        : undefined;
    const deferred = inherited !== undefined ? { ...own, namespace: inherited } : own;
    const comparable =
      typeof eip !== 'string' &&
      deferred.namespace === undefined &&
      (eip.namespaceInput === undefined || knownNow(eip.namespaceInput) !== undefined);
    const issues = validateElasticIPAttachment(object, comparable ? (eip.namespace ?? 'default') : undefined, [
      ...declared,
      object,
    ]);
    super(
      ElasticIPAttachment.TYPE,
      name,
      { object, issues, declaredIn: declared, dependsOn: typeof eip === 'string' ? [] : [eip], deferred },
      opts,
    );
    this.registerOutputs({});
  }
}
