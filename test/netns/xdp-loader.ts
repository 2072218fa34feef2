// A tiny loader the netns tests run as a separate process inside the "node" network namespace
// (`nsenter --net=...`): XDP attach and detach use netlink and ifindexes of the caller's network
// namespace, and a separate process is what lets a test prove that the program and maps outlive
// their loader. Map reads and writes need no namespace: tests open the pins directly.
//
// Usage: tsx test/netns/xdp-loader.ts attach|detach|attach-object '<json options>'
//        -> one JSON line on stdout. attach-object loads any single-program object (the no-op and
//        reflect programs) and attaches it with the plain binding, leaving nothing on bpffs.
import { execFileSync } from 'node:child_process';
import { ifNameToIndex, progInfo, xdpAttach, XDP_FLAGS } from '../../runtime/agent/bpf/libbpf';
import { BpfObject } from '../../runtime/agent/bpf/object';
import { attachArpResponder, detachArpResponder, type XdpModeRequest } from '../../runtime/agent/bpf/responder';

interface LoaderRequest {
  readonly ifname: string;
  readonly pinDir: string;
  readonly mode?: XdpModeRequest;
  readonly guard?: boolean;
  readonly conflictDetection?: boolean;
  readonly objectPath?: string;
  /** attach-object: the program's name in the object. */
  readonly program?: string;
}

function attachObject(ifindex: number, request: LoaderRequest): { programId: number } {
  const obj = BpfObject.open(request.objectPath!);
  try {
    obj.load();
    const fd = obj.programFd(request.program!);
    const mode = request.mode === 'native' ? XDP_FLAGS.DRV_MODE : XDP_FLAGS.SKB_MODE;
    xdpAttach(ifindex, fd, mode);
    return { programId: progInfo(fd).id };
  } finally {
    obj.close(); // the netlink attachment keeps the program alive
  }
}

function interfaceMac(ifname: string): string {
  const [link] = JSON.parse(execFileSync('ip', ['-j', 'link', 'show', 'dev', ifname], { encoding: 'utf8' })) as Array<{
    address: string;
  }>;
  return link.address;
}

function main(): void {
  const [command, json] = process.argv.slice(2);
  const request = JSON.parse(json ?? '{}') as LoaderRequest;
  const ifindex = ifNameToIndex(request.ifname);
  if (command === 'attach') {
    const mac = interfaceMac(request.ifname);
    const result = attachArpResponder({ ...request, ifindex, mac });
    result.maps.close();
    const { maps: _maps, ...rest } = result;
    process.stdout.write(`${JSON.stringify({ ...rest, ifindex, mac })}\n`);
  } else if (command === 'detach') {
    process.stdout.write(`${JSON.stringify({ detached: detachArpResponder(ifindex, request.pinDir) })}\n`);
  } else if (command === 'attach-object') {
    process.stdout.write(`${JSON.stringify(attachObject(ifindex, request))}\n`);
  } else {
    throw new Error(`unknown command '${command}' (attach|detach|attach-object)`);
  }
}

main();
