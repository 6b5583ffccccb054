/** How long log lines may wait without a byte of progress once the command is done. @default 1 s */
export const LOG_STALL_MS = 1_000;

/**
 * Called once the command is done. A process ends when its output is written; when nothing reads standard error (a
 * hung log shipper, see BoundedLogOutput), its last log lines never are. A daemon stopped by SIGTERM then stayed up,
 * stopped but not gone, until its supervisor lost patience and killed it. So once the command is done, log lines that
 * make no progress for `stallMs` are given up, and the process exits with its exit code.
 *
 * Only standard error: standard output is the command's answer, and is waited for as long as its reader takes (as
 * `ticket-mirror status | less` expects). A slow reader that makes progress is waited for too.
 */
export function exitWhenLogStalls(
  stderr: { readonly writableLength: number } = process.stderr,
  stdout: { readonly writableLength: number } = process.stdout,
  exit: () => void = () => process.exit(),
  stallMs: number = LOG_STALL_MS,
): void {
  let waiting = stderr.writableLength;
  if (waiting === 0) return;
  // Unreferenced: it never keeps the process alive; the queued lines do, and this ends that.
  const timer = setInterval(() => {
    const now = stderr.writableLength;
    if (now === 0) clearInterval(timer);
    else if (now >= waiting && stdout.writableLength === 0) exit();
    waiting = now;
  }, stallMs).unref();
}
