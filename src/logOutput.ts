import type { Writable } from 'node:stream';

/** What a log may hold in memory, waiting for a reader, before it drops lines. @default 1 MiB */
export const PENDING_LOG_LIMIT = 1024 * 1024;

/** The libuv stream under a pipe's or socket's Writable; `setBlocking(false)` sets O_NONBLOCK. Not public: if absent, nothing. */
interface NodeStreamHandle {
  setBlocking?: (blocking: boolean) => number;
}

/**
 * Standard error as a log output that never stops the process, whoever reads the other end.
 *
 * A daemon's stderr is often a pipe: to a supervisor, a log shipper, `| tee`, `| less`. When the reader stops reading
 * (a hung collector, a pager left at its first screen) the pipe fills after 64 KiB. pino's synchronous destination
 * then blocked the whole process inside its next write — no pass, no status page, no signal handled — for as long as
 * the reader slept. Lines now go through Node's own stream, which writes at once when the pipe has room and otherwise
 * queues; while more than `limit` bytes wait, a new line is dropped whole and counted, and when the reader catches
 * up `onResumed` hears how many were lost (the logger says so in a line of its own).
 *
 * Not pino's asynchronous destination with its `maxLength`: it writes fd 2 from the thread pool, where a blocking
 * pipe holds a thread for good, and at exit it flushes synchronously — a process whose reader is gone would then never
 * end. Node's stdio stream writes a pipe without blocking, and at exit leaves what is queued, as this output drops it.
 *
 * That holds only while the pipe is non-blocking, and the flag belongs to the pipe, not to the process: every process
 * holding the same end shares it. A child started with this stderr clears it as it starts (libuv does, for fds 0–2),
 * and tsx starts one, esbuild, whenever it compiles a source its cache lacks: on the first run after an install, the
 * daemon then blocked in a write all the same. So each line sets the flag again before it is written (one ioctl).
 *
 * A file or a terminal is written synchronously by Node itself, and nothing queues. A terminal paused with Ctrl-S
 * still pauses the process: that write is the terminal's own, as in every program run in one.
 */
export class BoundedLogOutput {
  #dropped = 0;

  /** Hears how many lines were dropped, once the stream has room again; set after the logger exists. */
  onResumed: (dropped: number) => void = () => {};

  /** Set once the stream failed (EPIPE: the reader is gone): nothing more is written. */
  #broken = false;

  /** @param limit bytes queued beyond which lines are dropped; at least the stream's highWaterMark, so 'drain' comes. */
  constructor(
    readonly stream: Pick<Writable, 'write' | 'writableLength' | 'once' | 'on'>,
    readonly limit: number = PENDING_LOG_LIMIT,
  ) {
    // A reader that went away (a log shipper restarted, `| head`) fails the next write with EPIPE, which unheard was an
    // uncaught exception: the daemon exited 1 over its log. As with a reader that stops reading, it carries on unlogged
    // (as systemd runs a service, with SIGPIPE ignored).
    stream.on('error', () => {
      this.#broken = true;
    });
  }

  write(line: string): void {
    if (this.#broken) return;
    if (this.stream.writableLength < this.limit) {
      (this.stream as { _handle?: NodeStreamHandle })._handle?.setBlocking?.(false);
      this.stream.write(line);
      return;
    }
    if (this.#dropped++ === 0) this.stream.once('drain', () => this.#resumed());
  }

  #resumed(): void {
    const dropped = this.#dropped;
    this.#dropped = 0;
    this.onResumed(dropped);
  }
}
