import { ApiObject, ApiObjectMetadata } from 'cdk8s';
import { Construct } from 'constructs';
import { ElasticIPAttachment as ElasticIPAttachmentObject } from '../../api';
import { renderElasticIPAttachment, validateElasticIPAttachment } from '../shared/kinds';
import { ObjectMetadataInput } from '../shared/metadata';
import { defaultName, emit, findAllInApp, metadataInput } from './base';
import { ElasticIP } from './elastic-ip';

export interface ElasticIPAttachmentProps {
  /**
   * Metadata of the attachment; it must be in the ElasticIP's namespace (EIPA-1).
   * @default name = the construct id; namespace = the ElasticIP construct's namespace, if given
   */
  readonly metadata?: ApiObjectMetadata;
  /** The ElasticIP to bind: a construct or a name in the same namespace (EIPA-1). */
  readonly elasticIP: ElasticIP | string;
  /**
   * The NetworkInterface to translate to, named `<pod>.<interface>` (NIC-1).
   * @example 'nginx.eth0'
   */
  readonly networkInterface: string;
}

/** Binds an ElasticIP to a Pod NIC through 1:1 NAT (EIP-4, EIPA-1, EIPA-2). */
export class ElasticIPAttachment extends Construct {
  public readonly name: string;
  public readonly apiObject: ApiObject;
  private readonly object: ElasticIPAttachmentObject;

  constructor(scope: Construct, id: string, props: ElasticIPAttachmentProps) {
    super(scope, id);
    const eip = props.elasticIP;
    const eipNamespace = typeof eip === 'string' ? undefined : eip.namespace;
    const metadata: ObjectMetadataInput = metadataInput(props.metadata) ?? {};
    this.object = renderElasticIPAttachment(defaultName(this, props.metadata), {
      elasticIP: typeof eip === 'string' ? eip : eip.name,
      networkInterface: props.networkInterface,
      metadata: { ...metadata, namespace: metadata.namespace ?? eipNamespace },
    });
    this.name = this.object.metadata.name!;
    this.apiObject = emit(this, this.object, () =>
      validateElasticIPAttachment(
        this.object,
        typeof eip === 'string' ? undefined : (eip.namespace ?? 'default'),
        findAllInApp(this, ElasticIPAttachment).map((a) => (a === this ? this.object : a.toObject())),
      ),
    );
  }

  /** The ElasticIPAttachment object as synthesized (a copy). */
  public toObject(): ElasticIPAttachmentObject {
    return structuredClone(this.object);
  }
}
