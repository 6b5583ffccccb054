import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * What Grafana does to a dashboard's queries before they reach a database, for the tests that run them: its template
 * variables ($__interval) and the PostgreSQL data source's macros, as pkg/tsdb/grafana-postgresql-datasource/macros.go
 * expands them (same pattern, same output) — so a query that only works by luck of a macro's text fails here too.
 */

export const GRAFANA_DIR = resolve(import.meta.dirname, '../../grafana');

export interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { type: string; uid: string };
  targets?: Array<{ refId: string; datasource?: { type: string; uid: string }; expr?: string; rawSql?: string; format?: string }>;
  fieldConfig?: { overrides?: Array<{ matcher: { id: string; options: string } }> };
  options?: { xField?: string };
}

export interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
}

export function readDashboard(name: 'operations' | 'support'): Dashboard {
  return JSON.parse(readFileSync(resolve(GRAFANA_DIR, 'dashboards', `${name}.json`), 'utf8')) as Dashboard;
}

export interface TimeRange {
  from: Date;
  to: Date;
}

const UNITS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

/** Seconds of a Grafana interval (`5m`, `1d`, `'1h'`). */
function intervalSeconds(text: string): number {
  const m = /^(\d+)(ms|s|m|h|d|w)$/.exec(text.replace(/^'|'$/g, ''));
  if (!m) throw new Error(`error parsing interval ${text}`);
  return Number(m[1]) * UNITS[m[2]!]!;
}

/** Go's time.RFC3339Nano in UTC: no fraction when it is zero, trailing zeros dropped. */
function rfc3339Nano(date: Date): string {
  return date.toISOString().replace(/\.(\d*?)0*Z$/, (_, digits: string) => (digits ? `.${digits}Z` : 'Z'));
}

/**
 * A panel's rawSql as Grafana sends it: `$__interval` and `$__interval_ms` replaced (the dashboard's own choice, here
 * `interval`), then every `$__macro(args)` expanded; an unknown macro is an error, as in Grafana.
 */
export function expandGrafanaSql(sql: string, range: TimeRange, interval = '1h'): string {
  const text = sql.replaceAll('$__interval_ms', String(intervalSeconds(interval) * 1000)).replaceAll('$__interval', interval);
  const from = rfc3339Nano(range.from);
  const to = rfc3339Nano(range.to);
  const macro = /\$([_a-zA-Z0-9]+)\(([^)]*)\)/g;
  return text.replace(macro, (whole: string, name: string, argText: string, offset: number) => {
    // As Grafana: `$__timeGroup(...)` directly followed by a comma is the pre-5.3 form that also names the column.
    if (name === '__timeGroup' && text[offset + whole.length] === ',') name = '__timeGroupAlias';
    const args = argText.split(',').map((a) => a.trim());
    const column = () => {
      if (!args[0]) throw new Error(`missing time column argument for macro ${name}`);
      return args[0];
    };
    const group = () => {
      if (args.length < 2) throw new Error(`macro ${name} needs time column and interval and optional fill value`);
      const seconds = intervalSeconds(args[1]!);
      return `floor(extract(epoch from ${args[0]})/${seconds})*${seconds}`;
    };
    switch (name) {
      case '__time':
        return `${column()} AS "time"`;
      case '__timeEpoch':
        return `extract(epoch from ${column()}) as "time"`;
      case '__timeFilter':
        return `${column()} BETWEEN '${from}' AND '${to}'`;
      case '__timeFrom':
        return `'${from}'`;
      case '__timeTo':
        return `'${to}'`;
      case '__timeGroup':
        return group();
      case '__timeGroupAlias':
        return `${group()} AS "time"`;
      case '__unixEpochFilter':
        return `${column()} >= ${Math.floor(range.from.getTime() / 1000)} AND ${column()} <= ${Math.floor(range.to.getTime() / 1000)}`;
      default:
        throw new Error(`unknown macro "${name}"`);
    }
  });
}

/** PromQL's keywords that look like names. */
const PROMQL_WORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

/**
 * The series names and label names a PromQL expression uses: names are identifiers that are not function calls or
 * keywords; labels are those of matchers (`{status!~"2.."}`) and of `by`/`without`/`on`/`ignoring` lists. Ranges
 * (`[$__rate_interval]`) and strings are left out.
 */
export function promqlNames(expr: string): { metrics: string[]; labels: string[] } {
  const labels: string[] = [];
  let rest = expr.replace(/\[[^\]]*\]/g, ' ');
  rest = rest.replace(/\{([^}]*)\}/g, (_, body: string) => {
    for (const m of body.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"/g)) labels.push(m[1]!);
    return ' ';
  });
  rest = rest.replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g, (_, list: string) => {
    labels.push(...list.split(',').map((l) => l.trim()).filter(Boolean));
    return ' ';
  });
  const metrics = [...rest.matchAll(/(?<![a-zA-Z0-9_:.])[a-zA-Z_:][a-zA-Z0-9_:]*(?![a-zA-Z0-9_:]|\s*\()/g)]
    .map((m) => m[0])
    .filter((name) => !PROMQL_WORDS.has(name.toLowerCase()));
  return { metrics: [...new Set(metrics)], labels: [...new Set(labels)] };
}

/** Every series of a Prometheus exposition text, with the label names its samples carry. */
export function exposedSeries(text: string): Map<string, Set<string>> {
  const series = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    const typed = /^# TYPE (\S+) (\S+)/.exec(line);
    if (typed) {
      const [, name, type] = typed;
      const names = type === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : type === 'summary' ? [name!, `${name}_sum`, `${name}_count`] : [name!];
      for (const n of names) if (!series.has(n)) series.set(n, new Set());
      continue;
    }
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? /.exec(line);
    if (!sample) continue;
    const labels = series.get(sample[1]!) ?? new Set<string>();
    for (const m of (sample[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="/g)) labels.add(m[1]!);
    series.set(sample[1]!, labels);
  }
  return series;
}
