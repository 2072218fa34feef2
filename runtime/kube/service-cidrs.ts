/** networking.k8s.io/v1 ServiceCIDRs, read by the agent (NAT-2) and the controller (H5). */
import { Resources } from './resources';
import type { Logger } from './log';
import { isNotFound, type RestClient } from './rest';

/**
 * Whether the API server serves networking.k8s.io/v1 ServiceCIDRs (GA in 1.33; Juneau supports
 * 1.31, where they are beta and off by default). Discovery, which every authenticated client may
 * read; an error other than "not served" is thrown, so the start stops like the Node read does.
 */
export async function serviceCIDRsServed(rest: RestClient): Promise<boolean> {
  const t = Resources.serviceCIDRs;
  try {
    const list = await rest.request<{ resources?: Array<{ name?: string }> }>('GET', `/apis/${t.group}/${t.version}`);
    return (list.resources ?? []).some((res) => res.name === t.plural);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    return false;
  }
}

/** serviceCIDRsServed, logging once what the program does without them (`without`) when not served. */
export async function serviceCIDRsServedOrLog(rest: RestClient, logger: Logger, without: string): Promise<boolean> {
  const served = await serviceCIDRsServed(rest);
  const t = Resources.serviceCIDRs;
  if (!served)
    logger.info(`the API server serves no ${t.group}/${t.version} ${t.plural} (Kubernetes before 1.33): ${without}`);
  return served;
}
