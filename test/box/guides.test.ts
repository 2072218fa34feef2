// The task guides of docs/guides/ run as written on the cluster in a box (issue 31): Juneau
// installed from the image and the manifest as synthesized, then every file and every command of
// each page, in page order (test/shared/guides.ts reads them from the page). Only two things are
// changed, as each page says: the documentation addresses 10.225.32.x become the box's segment,
// and the application image becomes the box's echo server. The arp network guide's clean-up runs
// last, because the ElasticIP guide builds on its network.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ECHO_IMAGE } from '../../scripts/images/echo';
import { REPO_ROOT } from '../cluster/paths';
import { readGuide, type GuideSection } from '../shared/guides';
import { sharedEchoBox } from './echo-box';
import { bashIn } from './exec';
import { macOf } from './router-view';
import { describeOnBox } from './session';

const DOC_PREFIX = '10.225.32.';
const DOC_IMAGE = 'registry.example/web:1';

interface Ran {
  readonly script: string;
  readonly out: string;
}

describeOnBox('docs/guides, every block run as written on the box', () => {
  const echoBox = sharedEchoBox('juneau-guides-box-', { nodes: 2, label: 'guides box' });
  const { kubectl } = echoBox;
  const arpGuide = readGuide('arp-network.md');
  const eipGuide = readGuide('elastic-ip.md');
  const troubleGuide = readGuide('troubleshooting.md');
  let files = '';
  let env: NodeJS.ProcessEnv = {};
  const at = (last: number) => `${echoBox.box.segment}.${last}`;
  const local = (text: string) =>
    text.replaceAll(DOC_PREFIX, `${echoBox.box.segment}.`).replaceAll(DOC_IMAGE, ECHO_IMAGE);

  /** bash -euo pipefail in the files' folder, kubectl and `kubectl juneau` on PATH against the box. */
  const shell = (script: string) =>
    new Promise<string>((resolve, reject) =>
      execFile(
        'bash',
        ['--norc', '-euo', 'pipefail', '-c', script],
        { cwd: files, env, timeout: 300_000, maxBuffer: 16 << 20 },
        (err, stdout, stderr) =>
          err ? reject(new Error(`guide command failed:\n${script}\n${stderr || err.message}`)) : resolve(stdout),
      ),
    );

  /** Runs the sections of a guide (those `pick` keeps): saves its files, runs its commands; what each printed. */
  const follow = async (sections: GuideSection[], pick: (heading: string) => boolean): Promise<Ran[]> => {
    const ran: Ran[] = [];
    for (const section of sections.filter((s) => pick(s.heading)))
      for (const step of section.steps) {
        if (step.kind === 'file') {
          fs.writeFileSync(path.join(files, step.name), local(step.text));
          continue;
        }
        const script = local(step.script);
        const out =
          step.where === 'segment' ? await bashIn(echoBox.router, `set -euo pipefail\n${script}`) : await shell(script);
        console.log(`guide: ${section.heading || '(top)'}\n$ ${script.trim()}\n${out.trim()}`);
        ran.push({ script, out });
      }
    return ran;
  };
  const outputOf = (ran: Ran[], needle: string) => {
    const found = ran.find((r) => r.script.includes(needle));
    if (!found) throw new Error(`no command of the guide contains ${needle}`);
    return found.out;
  };
  const cleanUp = (heading: string) => heading === 'Cleaning up' || heading.endsWith('. Cleaning up');

  beforeAll(() => {
    files = fs.mkdtempSync(path.join(echoBox.work, 'guide-'));
    const plugins = path.join(files, '.bin');
    fs.mkdirSync(plugins);
    // kubectl finds `kubectl juneau` as kubectl-juneau on PATH, as a user's install puts it there.
    fs.writeFileSync(
      path.join(plugins, 'kubectl-juneau'),
      `#!/bin/sh\nexec ${process.execPath} ${path.join(REPO_ROOT, 'build', 'bin', 'kubectl-juneau.js')} "$@"\n`,
      { mode: 0o755 },
    );
    env = {
      ...process.env,
      PATH: `${plugins}:${echoBox.status.binDir}:${process.env.PATH ?? ''}`,
      KUBECONFIG: echoBox.status.kubeconfigPath,
    };
  });

  test('EN-7, EIP-9, SLB-3, ARP-1, SLB-6: the arp network guide: network, first ElasticIP, first Service; the VIP answered by one MAC, the node the ServiceLoadBalancer names, and reached with the client address kept', async () => {
    const ran = await follow(arpGuide, (h) => !cleanUp(h));
    const vip = at(242);
    const slb = JSON.parse(await kubectl(['get', 'serviceloadbalancer', 'web', '-o', 'json'])) as {
      status: { phase: string; arpAnnouncingNode?: string };
    };
    const nodeName = slb.status.arpAnnouncingNode ?? '';
    // The guide's `kubectl get serviceloadbalancer web` row: the VIP, Ready, and the answering node.
    expect(outputOf(ran, 'kubectl get serviceloadbalancer web')).toMatch(
      new RegExp(`^web\\s+${vip.replaceAll('.', '\\.')}\\s+Ready\\s+${nodeName}\\s`, 'm'),
    );
    expect(outputOf(ran, 'kubectl get elasticip first-eip')).toMatch(
      new RegExp(`${at(241).replaceAll('.', '\\.')}.*Available`),
    );

    // arping: three replies, every one from the MAC of the node NODE names.
    const arping = outputOf(ran, 'arping -b -c 3');
    expect(arping).toContain('Sent 3 probes (3 broadcast(s))');
    const macs = [...arping.matchAll(/reply from \S+ \[([0-9a-f:]+)\]/gi)].map((m) => m[1].toLowerCase());
    expect(macs).toHaveLength(3);
    const node = echoBox.box.nodes.find((n) => n.name === nodeName);
    if (!node) throw new Error(`status.arpAnnouncingNode '${nodeName}' names no node of the box`);
    expect(new Set(macs)).toEqual(new Set([await macOf(node.netns)]));
    expect(slb.status.phase).toBe('Ready');

    // curl from the segment: a pod of web answered, and saw the client's own address (Local).
    expect(outputOf(ran, 'curl -s http://')).toMatch(new RegExp(`^client=${echoBox.routerIp} pod=web-`, 'm'));
    // kubectl juneau why names the holder and the answering node.
    const why = outputOf(ran, 'kubectl juneau why');
    expect(why).toContain('default/web');
    expect(why).toContain(nodeName);
    expect(outputOf(ran, 'kubectl juneau status')).toContain(vip);
  });

  test('SLB-8, SLB-3, SLB-6: the troubleshooting guide: pods scaled to 0, the VIP Degraded and answered by nobody, why says why; a pod back, answered again; a Pending attachment names what it waits for; the node dump holds the VIP', async () => {
    const ran = await follow(troubleGuide, () => true);
    const vip = at(242);
    // Degraded: arping from the segment heard nothing (the guide's `|| echo` prints it).
    const silent = outputOf(ran, `arping -b -c 2 -w 3 ${vip}`);
    expect(silent).toContain('Received 0 response(s)');
    expect(silent).toContain('no answer');
    expect(outputOf(ran, 'kubectl juneau why service/web')).toMatch(/Degraded/);
    expect(outputOf(ran, 'involvedObject.name=web')).toMatch(/Degraded/);
    // Back: why names the answering node, the one whose table holds the VIP.
    const node = JSON.parse(await kubectl(['get', 'serviceloadbalancer', 'web', '-o', 'json'])) as {
      status: { arpAnnouncingNode?: string };
    };
    expect(outputOf(ran, `kubectl juneau why ${vip}`)).toContain(node.status.arpAnnouncingNode ?? '(none)');
    expect(outputOf(ran, 'kubectl get elasticipattachment typo-eip -o wide')).toMatch(
      /Pending.*no-such-pod\.eth0|no-such-pod\.eth0.*Pending/,
    );
    expect(outputOf(ran, 'kubectl juneau why eipa/typo-eip')).toContain('no-such-pod.eth0');
    expect(outputOf(ran, 'kubectl juneau why eipa/typo-eip')).toMatch(
      new RegExp(`ARPAdvertisement for ${at(245).replaceAll('.', '\\.')}: none`),
    );
    expect(outputOf(ran, 'bpf dump external_arp_table')).toContain(vip);
  });

  test('EIP-4, NAT-1, DIR-1, CNI-1: the ElasticIP guide: through NAT and directly on eth0, each reached from the segment at its ElasticIP', async () => {
    const ran = await follow(eipGuide, (h) => !cleanUp(h));
    expect(outputOf(ran, `curl -s http://${at(243)}:8080/`)).toMatch(
      new RegExp(`^client=${echoBox.routerIp} pod=api `, 'm'),
    );
    expect(outputOf(ran, `curl -s http://${at(244)}:8080/`)).toMatch(
      new RegExp(`^client=${echoBox.routerIp} pod=sip `, 'm'),
    );
    expect(outputOf(ran, 'kubectl get elasticip api-eip')).toMatch(/Attached/);
    expect(outputOf(ran, 'kubectl get networkinterface sip.eth0')).toMatch(/sip-eip\s+Ready/);
    expect(outputOf(ran, 'reason=ElasticIPConfigured')).toContain('ElasticIPConfigured');
  });

  test("the guides' clean-ups, run as written, leave no Juneau object and no ARPAdvertisement behind", async () => {
    await follow(eipGuide, cleanUp);
    await follow(arpGuide, cleanUp);
    for (const kind of ['elasticips', 'elasticipattachments', 'serviceloadbalancers', 'networkinterfaces'])
      expect(await kubectl(['get', kind, '-A', '-o', 'name'])).toBe('');
    expect(await kubectl(['get', 'arpadvertisements', '-o', 'name'])).toBe('');
    expect(await kubectl(['get', 'externalnetworks,addresspools', '-o', 'name'])).toBe('');
  });
});
