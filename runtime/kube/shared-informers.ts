/**
 * One informer per kind and selection, shared by whoever reads it, as client-go's
 * SharedInformerFactory: the reconcilers, the duplicate detector (ARP-4) and the webhooks' caches
 * each asked for their own, so at 10,000 addresses the controller held the same ARPAdvertisements
 * two or three times (bench/scale). A reader asks with its options; the informer of the same type,
 * namespace and selectors is returned, with the reader's indexes added to it.
 */
import { Informer, type InformerOptions, type ListWatchClient } from './informer';
import type { Logger } from './log';
import type { KubeObject } from './types';

export class SharedInformers {
  private readonly informers = new Map<string, Informer<KubeObject>>();

  constructor(
    private readonly client: ListWatchClient,
    private readonly logger?: Logger,
  ) {}

  /**
   * The informer for `options`' type, namespace and selectors, created on first use (the options
   * of that first use, transform and idle bound included, are the informer's); `indexers` are
   * added to it either way. Not started: each reader starts it (start is idempotent).
   */
  informer<T extends KubeObject>(options: InformerOptions<T>): Informer<T> {
    const { type, namespace, labelSelector, fieldSelector } = options;
    const key = [type.group, type.version, type.plural, namespace, labelSelector, fieldSelector].join('|');
    let informer = this.informers.get(key) as Informer<T> | undefined;
    if (!informer) {
      informer = new Informer<T>(this.client, { logger: this.logger, ...options });
      this.informers.set(key, informer as unknown as Informer<KubeObject>);
    } else if (options.indexers) informer.addIndexers(options.indexers);
    return informer;
  }

  /** Every informer created so far. */
  all(): Array<Informer<KubeObject>> {
    return [...this.informers.values()];
  }
}
