import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

/** How long a named pipe is waited for, by default: a secret agent writes at once, or it is not coming. */
export const PIPE_WAIT_MS = 10_000;
const PIPE_POLL_MS = 20;

/** A pipe that nothing wrote to (and closed) in time: `code` ETIMEDOUT, like the errors of `fs`. */
export class PipeTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(waitMs: number) {
    super(`a pipe nothing wrote to within ${waitMs / 1000} s`);
  }
}

/**
 * The first `max` bytes of a secret file, without reading the rest: /dev/zero or a huge file ends there. A named pipe —
 * a secret agent's FIFO, or a shell's process substitution (`TICKETS_API_TOKEN_FILE=<(pass show api)`, /dev/fd/N) — is
 * opened without blocking and read until its writer closes it, for at most `waitMs`: opened as a plain file, a FIFO
 * that no one ever wrote to held the start for ever, silent. When the time is up, what was read is the content (a
 * writer that keeps the pipe open after writing its token); nothing read at all is a PipeTimeoutError.
 */
export function readAtMost(path: string, max: number, waitMs = PIPE_WAIT_MS): Buffer {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    // O_NONBLOCK changes nothing for a regular file; for a pipe, a read with no data yet is EAGAIN, and a read with no
    // writer yet is an end of file that may not be the end: its writer may still come.
    const stat = fstatSync(fd);
    const pipe = stat.isFIFO();
    // A pipe gives its content once: read again in this process (the configuration is loaded more than once by a
    // command), it is what the first read gave, not a wait for a writer that has come and gone.
    const key = `${stat.dev}:${stat.ino}`;
    const earlier = pipe ? pipesRead.get(key) : undefined;
    if (earlier instanceof Error) throw earlier;
    if (earlier) return earlier.subarray(0, max);
    if (pipe) {
      try {
        const content = Buffer.from(readOpen(fd, true, max, waitMs));
        pipesRead.set(key, content);
        return content;
      } catch (error) {
        if (error instanceof PipeTimeoutError) pipesRead.set(key, error);
        throw error;
      }
    }
    return readOpen(fd, false, max, waitMs);
  } finally {
    closeSync(fd);
  }
}

/** What each pipe read in this process gave (its content, or the wait that found nothing), by device and inode. */
const pipesRead = new Map<string, Buffer | PipeTimeoutError>();

/** Reads up to `max` bytes of an open file (see readAtMost); a pipe for at most `waitMs`. */
function readOpen(fd: number, pipe: boolean, max: number, waitMs: number): Buffer {
  const deadline = performance.now() + waitMs;
  const buffer = Buffer.alloc(max);
  let length = 0;
  while (length < max) {
    let n: number;
    try {
      n = readSync(fd, buffer, length, max - length, null);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
      n = -1;
    }
    if (n > 0) length += n;
    // The end: a regular file's, or a pipe's whose writer has written and closed it.
    else if (n === 0 && (!pipe || length > 0)) break;
    // A pipe's time is up, whether nothing came or its writer trickles bytes and never closes it.
    if (pipe && performance.now() >= deadline) {
      if (length > 0) break;
      throw new PipeTimeoutError(waitMs);
    }
    if (n <= 0) pause(PIPE_POLL_MS);
  }
  return buffer.subarray(0, length);
}

/** What to say of an error from readAtMost, after "cannot be read": the code, and what it means for a pipe. */
export function readProblem(error: unknown): string {
  if (error instanceof PipeTimeoutError) return `${error.code}: ${error.message}`;
  return String((error as NodeJS.ErrnoException).code ?? (error as Error).message);
}

/** Blocks the thread for `ms`: the configuration is read synchronously, before anything else runs. */
function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
