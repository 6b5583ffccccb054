import { CommanderError } from 'commander';
import { createLogger, type Logger, type LogLevel } from '../logger.ts';
import { exitWhenLogStalls } from './exitWhenLogStalls.ts';
import { holdSignals, releaseHeldSignals } from './heldSignals.ts';
import { installProcessGuards } from './processGuards.ts';
import { buildProgram, commandLine, reportFailure } from './program.ts';

/** The entry point of `ticket-mirror` (bin/ticket-mirror.js, and dist/cli/main.js in the Docker image). */
export async function main(argv: string[]): Promise<void> {
  const program = buildProgram().exitOverride();
  try {
    await program.parseAsync(commandLine(program, argv));
  } catch (error) {
    if (error instanceof CommanderError) {
      // Commander has said what was wrong: 0 after --help, 1 for an unknown command or option or a bad argument.
      process.exitCode = error.exitCode;
      return;
    }
    process.exitCode = reportFailure(error);
  } finally {
    // No command took them (--help, a parse error, a failure before the action): their default action, as it would have been.
    releaseHeldSignals();
  }
}

/** The guards' logger, before (and whatever) the configuration says: LOG_LEVEL when pino knows it, else info. */
function guardLogger(level: string | undefined): Logger {
  try {
    return createLogger((level?.trim() || 'info') as LogLevel);
  } catch {
    return createLogger('info');
  }
}

// Already held by bin/ticket-mirror.js; here for dist/cli/main.js, whose commands load their modules when they start.
holdSignals();
installProcessGuards(guardLogger(process.env.LOG_LEVEL));
await main(process.argv);
exitWhenLogStalls();
