/**
 * koffi (a native addon) loads on first use, not with the modules that bind C through it
 * (libbpf, libc's packet sockets): kubectl-juneau bundles those modules but runs most commands
 * on a laptop, and koffi is an optional peer dependency of the package (a user of the constructs
 * does not install it; the image has it). Use `koffi` like the module itself.
 */
import type * as Koffi from 'koffi';

let loaded: typeof Koffi | undefined;

function load(): typeof Koffi {
  try {
    // Loaded lazily, see above.
    loaded ??= require('koffi') as typeof Koffi;
  } catch (err) {
    throw new Error(
      `calling C from the agent needs the koffi package (npm install koffi; the juneau image includes it): ${(err as Error).message}`,
    );
  }
  return loaded;
}

export const koffi = new Proxy({} as typeof Koffi, {
  get: (_target, name) => (load() as unknown as Record<string | symbol, unknown>)[name],
});
