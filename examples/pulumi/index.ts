// The Pulumi program behind Pulumi.yaml: Juneau installed, then the seeds' examples on top of it.
// `pulumi up` against a cluster whose nodes can run the agent; the stack outputs are the addresses
// the controller allocated.
import { JuneauInstall } from '../../constructs/pulumi';
import { declareSeedExamples } from './seed-examples';

const install = new JuneauInstall('juneau', {});
const examples = declareSeedExamples({ dependsOn: [install] });

/** web-eip's address (requested: 10.225.32.241). */
export const webEipAddress = examples.webEip.address;
/** nginx-eip's address, any free one of ext-net-arp. */
export const nginxEipAddress = examples.nginxEip.address;
/** The VIP of the `web` LoadBalancer Service. */
export const webVip = examples.web.vip;
