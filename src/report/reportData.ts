import type { Db } from '../db/connect.ts';
import {
  backlogByDay,
  byWidget,
  createdByHourOfWeek,
  firstResponseByWeek,
  openByAssignee,
  reportSession,
  resolutionByWeek,
  waitingLongest,
  type AssigneeRow,
  type WaitingRow,
  type WeekRow,
  type WidgetRow,
} from '../db/repos/report.ts';
import { readReportSettings } from '../db/repos/reportSettings.ts';
import { safeText } from '../logger.ts';
import { isoMicros } from '../time.ts';
import type { ReportPeriod } from './period.ts';

/**
 * The time zone the report cuts days, weeks and hours in: the views' own (report_settings, written from
 * REPORT_TIMEZONE by the last migrate), so that the page and a BI tool on the views agree.
 */
export async function reportTimeZone(db: Db): Promise<string> {
  const { timeZone } = await readReportSettings(db);
  try {
    new Intl.DateTimeFormat('en', { timeZone });
  } catch {
    // report_settings is a table anyone with SQL may update: PostgreSQL takes names Intl does not (posix/Europe/Berlin).
    throw new ReportSettingsError(
      `report_settings.time_zone ${JSON.stringify(safeText(timeZone))} is not a time zone this program knows: set REPORT_TIMEZONE and run \`ticket-mirror migrate\`, which rewrites the row`,
    );
  }
  return timeZone;
}

/** report_settings holds what the report cannot use (a row changed by hand rather than through REPORT_*). */
export class ReportSettingsError extends Error {
  override name = 'ReportSettingsError';
}

/** Rows shown per table: the busiest widgets and assignees, the longest-waiting customers. */
export const REPORT_TOP_ROWS = 12;

/** Everything the report page shows, read from the views alone. */
export interface ReportData {
  period: ReportPeriod;
  timeZone: string;
  /** REPORT_BUSINESS_HOURS as given, when set: the medians are also counted in business hours. */
  businessHours: string | null;
  /** When it was made (canonical timestamp). */
  generatedAt: string;
  summary: {
    created: number;
    answered: number;
    resolved: number;
    medianFirstResponseSeconds: number | null;
    medianResolutionSeconds: number | null;
    /** The same in business hours; null without business hours. */
    medianFirstResponseBusinessSeconds: number | null;
    medianResolutionBusinessSeconds: number | null;
    openNow: number;
    waitingNow: number;
  };
  backlog: Array<{ day: string; open_tickets: number }>;
  firstResponse: Array<WeekRow & { week: string; answered: number }>;
  resolution: Array<WeekRow & { week: string }>;
  /** Tickets created per ISO weekday (index 0 = Monday) and hour: 7 × 24 counts, zeros included. */
  hourOfWeek: number[][];
  widgets: WidgetRow[];
  assignees: AssigneeRow[];
  waiting: WaitingRow[];
}

/**
 * The report's numbers, all from one snapshot of the database (a read-only repeatable-read transaction), so that the
 * charts and the totals agree with each other even while the daemon writes.
 */
export async function loadReportData(db: Db, period: ReportPeriod, timeZone: string, now: number): Promise<ReportData> {
  return db.transaction(
    async (tx) => {
      await reportSession(tx);
      const settings = await readReportSettings(tx);
      const p = { from: period.from, to: period.to, timeZone, business: settings.businessWindows !== null };
      const [frAll, ...firstResponse] = await firstResponseByWeek(tx, p);
      const [resAll, ...resolution] = await resolutionByWeek(tx, p);
      const backlog = await backlogByDay(tx, p);
      const cells = await createdByHourOfWeek(tx, p);
      const widgets = await byWidget(tx, p, REPORT_TOP_ROWS);
      const assignees = await openByAssignee(tx, REPORT_TOP_ROWS);
      const waiting = await waitingLongest(tx, timeZone, REPORT_TOP_ROWS);

      const hourOfWeek = Array.from({ length: 7 }, () => Array<number>(24).fill(0));
      for (const c of cells) hourOfWeek[c.dow - 1]![c.hour] = c.tickets;
      return {
        period,
        timeZone,
        businessHours: settings.businessHours,
        generatedAt: isoMicros(now),
        summary: {
          created: frAll?.tickets ?? 0,
          answered: frAll?.answered ?? 0,
          resolved: resAll?.tickets ?? 0,
          medianFirstResponseSeconds: frAll?.p50_s ?? null,
          medianResolutionSeconds: resAll?.p50_s ?? null,
          medianFirstResponseBusinessSeconds: frAll?.p50_business_s ?? null,
          medianResolutionBusinessSeconds: resAll?.p50_business_s ?? null,
          openNow: assignees[0]?.all_open ?? 0,
          waitingNow: waiting[0]?.all_waiting ?? 0,
        },
        backlog,
        firstResponse: firstResponse as ReportData['firstResponse'],
        resolution: resolution as ReportData['resolution'],
        hourOfWeek,
        widgets,
        assignees,
        waiting,
      };
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
}
