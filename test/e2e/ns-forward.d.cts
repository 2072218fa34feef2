import type * as net from 'node:net';

/** A server that pipes each connection both ways to a new one from `connect()`; an error on either closes both. */
export function forwardingServer(connect: () => net.Socket): net.Server;
