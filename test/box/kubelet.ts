// Each node's kubelet and kube-proxy: client certificates from the control plane's CA (the
// harness's PKI), kubeconfigs, and configuration files for this machine — cgroup v1 with the
// cgroupfs driver and no systemd, everything the kubelet would put in /var/lib/kubelet or
// /var/log/pods kept in the node's directory, kube-proxy in nftables mode (no IPVS in the kernel).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { writeKubeconfig } from '../cluster/kubeconfig';
import { issueCertificate } from '../cluster/pki';
import { ContainerdPaths } from './containerd';
import { NodeRecord } from './state';

export interface ControlPlaneAccess {
  server: string;
  /** The control plane's pki directory (ca.crt, ca.key, openssl.cnf). */
  pkiDir: string;
}

/** A client certificate and kubeconfig for `subj`, named `<name>.{crt,key,kubeconfig}`. */
export async function clientKubeconfig(
  cp: ControlPlaneAccess,
  name: string,
  subj: string,
  file: string,
): Promise<string> {
  await issueCertificate(cp.pkiDir, name, subj, 'client');
  writeKubeconfig(file, cp.server, (f) => path.join(cp.pkiDir, f), name);
  return file;
}

/**
 * A node component's folder `<node>/<component>`: its client identity `subj` (a certificate
 * `<component>-<node>` of the CA and a kubeconfig with it) and `config.yaml` from `config(kubeconfig)`.
 */
async function writeComponentFiles(
  cp: ControlPlaneAccess,
  node: NodeRecord,
  component: 'kubelet' | 'kube-proxy',
  subj: string,
  config: (kubeconfig: string) => object,
): Promise<{ dir: string; kubeconfig: string; config: string }> {
  const dir = path.join(node.dir, component);
  fs.mkdirSync(dir, { recursive: true });
  const kubeconfig = await clientKubeconfig(cp, `${component}-${node.name}`, subj, path.join(dir, 'kubeconfig'));
  const file = path.join(dir, 'config.yaml');
  fs.writeFileSync(file, JSON.stringify(config(kubeconfig), null, 2) + '\n'); // JSON is YAML
  return { dir, kubeconfig, config: file };
}

export interface KubeletFiles {
  config: string;
  kubeconfig: string;
  rootDir: string;
}

export async function writeKubeletFiles(
  cp: ControlPlaneAccess,
  node: NodeRecord,
  containerd: ContainerdPaths,
): Promise<KubeletFiles> {
  const subj = `/O=system:nodes/CN=system:node:${node.name}`;
  const files = await writeComponentFiles(cp, node, 'kubelet', subj, () => ({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    // The API server authenticates to the kubelet (exec, logs) with a client certificate of this CA.
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: path.join(cp.pkiDir, 'ca.crt') },
    },
    authorization: { mode: 'Webhook' },
    address: node.ip,
    port: 10250,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 10248,
    containerRuntimeEndpoint: `unix://${containerd.socket}`,
    // This machine: cgroup v1, no systemd; the node's cgroup (created beforehand in every
    // hierarchy) keeps its pods apart from the other nodes' on the same kernel.
    cgroupDriver: 'cgroupfs',
    failCgroupV1: false,
    cgroupRoot: `/${node.cgroup}`,
    cgroupsPerQOS: true,
    enforceNodeAllocatable: ['pods'],
    failSwapOn: false,
    podLogsDir: path.join(node.dir, 'pod-logs'),
    resolvConf: '/etc/resolv.conf',
    clusterDomain: 'cluster.local',
    // A shared, busy machine: other work must not make a node evict its pods or drop its images.
    evictionHard: {
      'memory.available': '1Mi',
      'nodefs.available': '1%',
      'imagefs.available': '1%',
      'nodefs.inodesFree': '1%',
    },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    registerNode: true,
  }));
  return { config: files.config, kubeconfig: files.kubeconfig, rootDir: path.join(files.dir, 'root') };
}

export function kubeletArgs(node: NodeRecord, files: KubeletFiles): string[] {
  return [
    `--config=${files.config}`,
    `--kubeconfig=${files.kubeconfig}`,
    `--root-dir=${files.rootDir}`,
    `--hostname-override=${node.name}`,
    `--node-ip=${node.ip}`,
  ];
}

export async function writeKubeProxyConfig(
  cp: ControlPlaneAccess,
  node: NodeRecord,
  clusterCidr: string,
): Promise<string> {
  // One identity for every node's kube-proxy, bound to system:node-proxier by default RBAC.
  const files = await writeComponentFiles(cp, node, 'kube-proxy', '/CN=system:kube-proxy', (kubeconfig) => ({
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    clientConnection: { kubeconfig },
    mode: 'nftables',
    hostnameOverride: node.name,
    bindAddress: '0.0.0.0',
    clusterCIDR: clusterCidr,
    healthzBindAddress: '127.0.0.1:10256',
    metricsBindAddress: '127.0.0.1:10249',
    // Leave the host-wide conntrack table size and timeouts alone (0 = do not set).
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
  }));
  return files.config;
}
