/**
 * The last line of a terminal, kept for a progress display while log lines scroll above it. Everything written to the
 * terminal while the line is shown goes through `write`, which takes the line away, writes, and puts it back: a log
 * line never lands in the middle of the progress line, and the progress line is never left half overwritten.
 */

export interface TerminalStream {
  write(chunk: string): unknown;
  /** Width of the terminal, when known (tty.WriteStream). */
  readonly columns?: number;
}

/** Carriage return, then erase the whole line (ECMA-48 EL 2). */
const ERASE_LINE = '\r\x1b[2K';

export class TerminalLine {
  readonly #out: TerminalStream;
  #text = '';

  constructor(out: TerminalStream) {
    this.#out = out;
  }

  /** The text shown now ('' when none). */
  get text(): string {
    return this.#text;
  }

  /** Shows `text` as the bottom line, cut to the terminal's width (a wrapped line could not be erased). */
  show(text: string): void {
    const width = this.#out.columns;
    const fitted = width && width > 1 && text.length >= width ? `${text.slice(0, width - 2)}…` : text;
    if (fitted === this.#text) return;
    this.#out.write(`${ERASE_LINE}${fitted}`);
    this.#text = fitted;
  }

  /** Takes the bottom line away; the cursor is left at the start of an empty line. */
  clear(): void {
    if (!this.#text) return;
    this.#out.write(ERASE_LINE);
    this.#text = '';
  }

  /** Writes whole lines (a log line) above the bottom line. */
  write(chunk: string): void {
    if (!this.#text) {
      this.#out.write(chunk);
      return;
    }
    this.#out.write(`${ERASE_LINE}${chunk}${chunk.endsWith('\n') ? '' : '\n'}${this.#text}`);
  }
}
