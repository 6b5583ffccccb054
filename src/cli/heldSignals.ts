/**
 * The signals that stop a process, held while the command line loads. From source (bin/ticket-mirror.js), tsx
 * compiles the sources as they are imported, about two seconds before `run` listens for SIGTERM; a supervisor's
 * SIGTERM in that window ended the process with 143 instead of the graceful stop and exit 0 the contract promises.
 *
 * The bin holds them before it imports anything else, and main.ts again (the Docker image runs dist/cli/main.js). A
 * command that listens for them itself (`run`, `demo`, `fleet run`, `simulator`) takes what was held and acts on it as
 * if it had been listening; for every other command main lets them go as soon as it knows the command, delivering
 * each again to the process, whose default action ends it as it would have before.
 *
 * No imports: the bin loads this module before the rest of the sources are compiled.
 */
const STOPPING: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];

let held: NodeJS.Signals[] | undefined;

function hold(signal: NodeJS.Signals): void {
  held?.push(signal);
}

/** Starts holding SIGTERM, SIGINT and SIGHUP (idempotent). */
export function holdSignals(): void {
  if (held) return;
  held = [];
  for (const signal of STOPPING) process.on(signal, hold);
}

/** For a command that now listens for them: stops holding, and returns the signals that came meanwhile, in order. */
export function takeHeldSignals(): NodeJS.Signals[] {
  if (!held) return [];
  for (const signal of STOPPING) process.off(signal, hold);
  const taken = held;
  held = undefined;
  return taken;
}

/**
 * For a command that does not listen for them: stops holding, and sends the first signal that came again to the
 * process (a later one would change nothing), where its default action applies unless someone listens now.
 */
export function releaseHeldSignals(): void {
  const [first] = takeHeldSignals();
  if (first) process.kill(process.pid, first);
}
