import type { StrategyName } from './strategies/index.ts';

/**
 * The lag of each strategy over simulated time, as a self-contained SVG: two panels (list-visible p95 per hour,
 * detail-only p50 per hour), a log time axis from a minute to a week, the bound as a dashed line, and ticket-mirror's
 * end of backfill as a vertical rule. Hours without changes leave gaps; unreflected changes pin the line to the top.
 */

export interface ChartSeries {
  strategy: StrategyName;
  /** Per hour of activity, ms; null: no change that hour; Infinity: not reflected by the end. */
  listP95: ReadonlyArray<number | null>;
  detailP50: ReadonlyArray<number | null>;
}

export interface ChartInput {
  series: ChartSeries[];
  /** Hours since the start at which ticket-mirror's backfill was complete, or null. */
  backfillDoneHour: number | null;
  /** The list-visible p95 bound (ms), drawn in the first panel. */
  listBoundMs: number | null;
  title: string;
}

const COLORS: Record<StrategyName, string> = { 'ticket-mirror': '#1f6feb', 'naive-cron': '#e36209', 'full-refresh': '#cf222e' };
const W = 960;
const PANEL_H = 260;
const M = { left: 70, right: 20, top: 64, bottom: 40, gap: 60 };
const Y_MIN = 60_000;
const Y_MAX = 7 * 86_400_000;
const Y_TICKS: Array<[number, string]> = [
  [60_000, '1 min'],
  [600_000, '10 min'],
  [3_600_000, '1 h'],
  [6 * 3_600_000, '6 h'],
  [86_400_000, '1 d'],
  [7 * 86_400_000, '7 d'],
];

export function lagChart(input: ChartInput): string {
  const hours = Math.max(1, ...input.series.map((s) => s.listP95.length));
  const plotW = W - M.left - M.right;
  const x = (h: number) => round(M.left + (h / hours) * plotW);
  const height = M.top + 2 * PANEL_H + M.gap + M.bottom;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" viewBox="0 0 ${W} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="${M.left}" y="24" font-size="15" font-weight="bold">${escapeXml(input.title)}</text>`,
  ];
  const panels: Array<{ key: 'listP95' | 'detailP50'; label: string }> = [
    { key: 'listP95', label: 'list-visible changes: p95 lag, by hour of the change' },
    { key: 'detailP50', label: 'detail-only changes: median lag, by hour of the change' },
  ];
  panels.forEach((panel, i) => {
    const top = M.top + i * (PANEL_H + M.gap);
    const y = (ms: number) => round(top + PANEL_H - (Math.log(clamp(ms, Y_MIN, Y_MAX) / Y_MIN) / Math.log(Y_MAX / Y_MIN)) * PANEL_H);
    parts.push(`<text x="${M.left}" y="${top - 8}" font-weight="bold">${escapeXml(panel.label)}</text>`);
    parts.push(`<rect x="${M.left}" y="${top}" width="${plotW}" height="${PANEL_H}" fill="none" stroke="#d0d7de"/>`);
    for (const [ms, label] of Y_TICKS) {
      parts.push(`<line x1="${M.left}" x2="${M.left + plotW}" y1="${y(ms)}" y2="${y(ms)}" stroke="#eaeef2"/>`);
      parts.push(`<text x="${M.left - 6}" y="${y(ms) + 4}" text-anchor="end" fill="#57606a">${label}</text>`);
    }
    for (let d = 0; d * 24 <= hours; d++) {
      parts.push(`<line x1="${x(d * 24)}" x2="${x(d * 24)}" y1="${top}" y2="${top + PANEL_H}" stroke="#eaeef2"/>`);
      parts.push(`<text x="${x(d * 24)}" y="${top + PANEL_H + 16}" text-anchor="middle" fill="#57606a">day ${d}</text>`);
    }
    if (input.backfillDoneHour !== null) {
      const bx = x(input.backfillDoneHour);
      parts.push(`<line x1="${bx}" x2="${bx}" y1="${top}" y2="${top + PANEL_H}" stroke="#1f6feb" stroke-dasharray="2 3"/>`);
      // Left of the rule when it stands in the right half, so that the label stays inside the plot.
      const right = bx > M.left + plotW / 2;
      parts.push(`<text x="${right ? bx - 4 : bx + 4}" y="${top + 14}" text-anchor="${right ? 'end' : 'start'}" fill="#1f6feb">ticket-mirror backfill complete</text>`);
    }
    if (panel.key === 'listP95' && input.listBoundMs !== null && Number.isFinite(input.listBoundMs)) {
      const by = y(input.listBoundMs);
      parts.push(`<line x1="${M.left}" x2="${M.left + plotW}" y1="${by}" y2="${by}" stroke="#2da44e" stroke-dasharray="6 4"/>`);
      parts.push(`<text x="${M.left + plotW - 4}" y="${by - 4}" text-anchor="end" fill="#2da44e">bound (any client)</text>`);
    }
    for (const s of input.series) parts.push(polyline(s[panel.key], x, y, COLORS[s.strategy]));
  });
  const legendY = height - 10;
  input.series.forEach((s, i) => {
    const lx = M.left + i * 170;
    parts.push(`<line x1="${lx}" x2="${lx + 24}" y1="${legendY - 4}" y2="${legendY - 4}" stroke="${COLORS[s.strategy]}" stroke-width="2.5"/>`);
    parts.push(`<text x="${lx + 30}" y="${legendY}">${s.strategy}</text>`);
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

/** One polyline per run of consecutive hours with changes. */
function polyline(values: ReadonlyArray<number | null>, x: (h: number) => number, y: (ms: number) => number, color: string): string {
  const runs: string[][] = [];
  let current: string[] = [];
  values.forEach((v, h) => {
    if (v === null) {
      if (current.length > 0) runs.push(current);
      current = [];
      return;
    }
    current.push(`${x(h + 0.5)},${y(v)}`);
  });
  if (current.length > 0) runs.push(current);
  return runs
    .map((pts) =>
      pts.length === 1
        ? `<circle cx="${pts[0]!.split(',')[0]}" cy="${pts[0]!.split(',')[1]}" r="1.8" fill="${color}"/>`
        : `<polyline points="${pts.join(' ')}" fill="none" stroke="${color}" stroke-width="1.5" stroke-linejoin="round" opacity="0.9"/>`,
    )
    .join('\n');
}

function round(v: number): number {
  return Math.round(v * 10) / 10;
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v));
}

function escapeXml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}
