// The Pulumi program behind Pulumi.yaml: Juneau installed, then the seeds' examples on top of it.
// `pulumi up` against a cluster whose nodes can run the agent; the stack outputs are the addresses
// the controller allocated. Stack config (`pulumi config set KEY VALUE`):
//   install        false on a cluster where Juneau is installed already (e.g. `kubectl apply` of
//                  dist/juneau-install.k8s.yaml): only the examples are declared. Default true.
//   webEipAddress  the address web-eip reserves (default 10.225.32.241)
//   webPort        the port of the `web` Service (default 80)
import * as pulumi from '@pulumi/pulumi';
import { JuneauInstall } from '../../constructs/pulumi';
import { declareSeedExamples } from './seed-examples';

const config = new pulumi.Config();
const install = (config.getBoolean('install') ?? true) ? new JuneauInstall('juneau', {}) : undefined;
const examples = declareSeedExamples(install ? { dependsOn: [install] } : {}, {
  webEipAddress: config.get('webEipAddress'),
  webPort: config.getNumber('webPort'),
});

/** web-eip's address (requested: 10.225.32.241). */
export const webEipAddress = examples.webEip.address;
/** nginx-eip's address, any free one of ext-net-arp. */
export const nginxEipAddress = examples.nginxEip.address;
/** The VIP of the `web` LoadBalancer Service (requested: 10.225.32.242). */
export const webVip = examples.web.vip;
