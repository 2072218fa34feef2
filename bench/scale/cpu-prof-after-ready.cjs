// Preloaded into the agent by bench/scale --profile (node --require): a CPU profile of the agent
// from its `ready` log on, written to $JUNEAU_CPU_PROF_DIR/agent-<pid>.cpuprofile on SIGHUP or at
// exit. Not `node --cpu-prof`: its sampling signal (SIGPROF, every 1 ms) interrupts the kernel's
// verifier during the XDP program load, which then fails with EAGAIN; after `ready` nothing is
// loaded any more.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const inspector = require('node:inspector');

const dir = process.env.JUNEAU_CPU_PROF_DIR;
if (dir) {
  const session = new inspector.Session();
  let state = 'waiting';
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = (chunk, ...rest) => {
    if (state === 'waiting' && String(chunk).includes('"msg":"ready')) {
      state = 'profiling';
      session.connect();
      // Same-thread session: the callbacks run synchronously, before post() returns.
      session.post('Profiler.enable');
      session.post('Profiler.setSamplingInterval', { interval: 1000 });
      session.post('Profiler.start');
    }
    return write(chunk, ...rest);
  };
  const stop = () => {
    if (state !== 'profiling') return;
    state = 'written';
    session.post('Profiler.stop', (err, result) => {
      if (err) throw err;
      // Written whole, then renamed: the bench waits for the name to appear.
      const file = path.join(dir, `agent-${process.pid}.cpuprofile`);
      fs.writeFileSync(`${file}.tmp`, JSON.stringify(result.profile));
      fs.renameSync(`${file}.tmp`, file);
    });
  };
  process.on('SIGHUP', stop);
  process.on('exit', stop);
}
