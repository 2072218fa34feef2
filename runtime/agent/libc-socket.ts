/**
 * libc's socket calls, bound once per process through koffi: the announcer's AF_PACKET socket and
 * the VXLAN device's netlink socket both use them; the CNI server reads its peers' credentials.
 */
import type { LibraryHandle } from 'koffi';
import { koffi } from './koffi';

function declareLibc(lib: LibraryHandle) {
  return {
    socket: lib.func('int socket(int domain, int type, int protocol)'),
    bind: lib.func('int bind(int fd, void *addr, uint32_t len)'),
    send: lib.func('intptr_t send(int fd, void *buf, size_t len, int flags)'),
    recv: lib.func('intptr_t recv(int fd, _Out_ void *buf, size_t len, int flags)'),
    close: lib.func('int close(int fd)'),
    getsockopt: lib.func(
      'int getsockopt(int fd, int level, int optname, _Out_ void *optval, _Inout_ uint32_t *optlen)',
    ),
  };
}

// One binding per process, shared by every copy of this module (Jest evaluates modules per file).
const LOADED = Symbol.for('juneau.agent.libc.socket');
export function libc(): ReturnType<typeof declareLibc> {
  const store = globalThis as { [LOADED]?: ReturnType<typeof declareLibc> };
  store[LOADED] ??= declareLibc(koffi.load('libc.so.6'));
  return store[LOADED];
}
