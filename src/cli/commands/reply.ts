import type { CommandContext } from '../context.ts';
import { ExitError } from '../exit.ts';

/** `ticket-mirror reply`: not built yet (the reply issue). Says so rather than pretending. */
export async function replyCommand(_ctx: CommandContext, _ticketId: string, _message: string): Promise<void> {
  throw new ExitError('`reply` is not built yet', 1);
}
