import { scrubSecrets, type Logger } from '../logger.ts';
import { EXIT } from './exit.ts';

/**
 * The process-wide policy for errors nothing caught, installed once at the composition root (main.ts). Without it
 * Node ends the process on an unhandled rejection (exit 1, a stack on stderr, no log line): one request to the
 * status server used to take the whole daemon down that way.
 *
 * - An unhandled rejection is a bug in a fire-and-forget promise: the work it belonged to has failed, but the event
 *   loop is intact and the daemon's own loop recovers from failed passes. Logged as an error, and the process goes on.
 * - An uncaught exception may have left a synchronous operation half done, and Node's documentation says resuming
 *   after one is unsafe: logged as fatal with its reason, and the process exits 1 on purpose. A supervisor restarts
 *   it; the embedded database's lock is taken over from the dead pid.
 *
 * Both go through the redacting logger, so no secret reaches the line.
 *
 * - Standard output or error whose reader has gone (`ticket-mirror status | head -1`, a supervisor or log shipper that
 *   closed the daemon's pipe) fails the next write there with EPIPE, emitted as an 'error' event. Unheard, that was an
 *   uncaught exception: a command that had done its work exited 1 calling it a bug, and a daemon logging pretty lines
 *   died at its next line, to be restarted into the same end. What goes there is lost, nothing else: the process goes
 *   on. Another write error (a full disk under a redirected output) leaves the output incomplete: exit 1 at the end,
 *   and a line on stderr saying so (and that the command's work is done: `reply` posted the reply all the same).
 */
export function installProcessGuards(
  logger: Logger,
  exit: (code: number) => void = (code) => process.exit(code),
  outputs: readonly NodeJS.EventEmitter[] = [process.stdout, process.stderr],
): void {
  for (const output of outputs) {
    let said = false;
    output.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') return;
      process.exitCode = EXIT.failure;
      // Exit 1 alone read as a failed command: `reply > /dev/full` posted the reply, and a script sent it again. Once.
      if (output === process.stdout && !said) {
        said = true;
        process.stderr.write(`ticket-mirror: could not write to standard output (${error.code ?? error.message}): what the command printed there is incomplete, but what it did is done\n`);
      }
    });
  }
  process.on('unhandledRejection', (reason) => {
    logger.error({ err: reason }, 'unhandled promise rejection (a bug): logged, the process carries on');
  });
  process.on('uncaughtException', (error, origin) => {
    logger.fatal({ err: error, origin }, 'uncaught exception (a bug): exiting with code 1');
    if (!logger.isLevelEnabled('fatal')) process.stderr.write(scrubSecrets(`ticket-mirror: uncaught exception, exiting: ${error?.message ?? String(error)}\n`));
    exit(EXIT.failure);
  });
}
