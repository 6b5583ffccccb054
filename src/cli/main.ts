import { CommanderError } from 'commander';
import { EXIT } from './exit.ts';
import { buildProgram, reportFailure } from './program.ts';

/** The entry point of `ticket-mirror` (bin/ticket-mirror.js, and dist/cli/main.js in the Docker image). */
export async function main(argv: string[]): Promise<void> {
  const program = buildProgram().exitOverride();
  try {
    await program.parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      process.exitCode = error.exitCode === 1 ? EXIT.usage : error.exitCode;
      return;
    }
    process.exitCode = reportFailure(error);
  }
}


await main(process.argv);
