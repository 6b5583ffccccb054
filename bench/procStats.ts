import { readFileSync } from 'node:fs';

/**
 * CPU and resident memory of child processes, sampled from /proc (Linux): what `npm run bench:fleet` reports per worker.
 * CPU is the share of one core over the sampling interval (utime + stime ticks, at the usual 100 Hz).
 */

const TICKS_PER_SECOND = 100;

export interface ProcSample {
  at: number;
  /** utime + stime, in seconds, since the process started. */
  cpuSeconds: number;
  rssBytes: number;
}

/** One sample of `pid`, or null once it is gone. */
export function sampleProcess(pid: number, at = Date.now()): ProcSample | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: the fields start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    return { at, cpuSeconds: (utime + stime) / TICKS_PER_SECOND, rssBytes: rssKb * 1024 };
  } catch {
    return null;
  }
}

export interface ProcSummary {
  /** Mean CPU over the whole sampling, in % of one core. */
  cpuMeanPercent: number;
  /** Highest CPU over one sampling interval, in % of one core. */
  cpuPeakPercent: number;
  rssPeakBytes: number;
  rssLastBytes: number;
}

/** Samples `pid` every `everyMs` until stopped; `summary()` at any time. */
export class ProcessSampler {
  readonly #pid: number;
  readonly #samples: ProcSample[] = [];
  readonly #timer: NodeJS.Timeout;

  constructor(pid: number, everyMs = 5_000) {
    this.#pid = pid;
    this.#take();
    this.#timer = setInterval(() => this.#take(), everyMs);
    this.#timer.unref();
  }

  #take(): void {
    const s = sampleProcess(this.#pid);
    if (s) this.#samples.push(s);
  }

  stop(): void {
    this.#take();
    clearInterval(this.#timer);
  }

  summary(): ProcSummary | null {
    const s = this.#samples;
    if (s.length < 2) return null;
    const first = s[0]!;
    const last = s.at(-1)!;
    let peak = 0;
    for (let i = 1; i < s.length; i++) {
      const span = (s[i]!.at - s[i - 1]!.at) / 1000;
      if (span > 0) peak = Math.max(peak, (s[i]!.cpuSeconds - s[i - 1]!.cpuSeconds) / span);
    }
    return {
      cpuMeanPercent: (100 * (last.cpuSeconds - first.cpuSeconds)) / Math.max(1e-9, (last.at - first.at) / 1000),
      cpuPeakPercent: 100 * peak,
      rssPeakBytes: Math.max(...s.map((x) => x.rssBytes)),
      rssLastBytes: last.rssBytes,
    };
  }
}
