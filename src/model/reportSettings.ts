/**
 * How the BI views cut time and judge service levels: the daemon's REPORT_* settings (config/reportSettings.ts parses
 * them), written into the one-row `report_settings` table by every migrate (db/repos/reportSettings.ts), where the
 * views and the business_seconds() function read them.
 */

/** One opening window of a week day, in local time of the report's time zone. */
export interface BusinessWindow {
  /** ISO day of the week: 1 = Monday … 7 = Sunday. */
  isodow: number;
  /** `HH:MM`, from 00:00. */
  opens: string;
  /** `HH:MM`, after `opens`, up to 24:00. */
  closes: string;
}

export interface ReportSettings {
  /** IANA name (REPORT_TIMEZONE), canonical as Intl gives it. */
  timeZone: string;
  /** REPORT_BUSINESS_HOURS as given; null when unset. */
  businessHours: string | null;
  /** The same, parsed, by day then opening; null when unset. */
  businessWindows: readonly BusinessWindow[] | null;
  /** REPORT_SLA_FIRST_RESPONSE in seconds; null when unset. */
  slaFirstResponseSeconds: number | null;
  /** REPORT_SLA_RESOLUTION in seconds; null when unset. */
  slaResolutionSeconds: number | null;
}

export const DEFAULT_REPORT_SETTINGS: ReportSettings = Object.freeze({
  timeZone: 'UTC',
  businessHours: null,
  businessWindows: null,
  slaFirstResponseSeconds: null,
  slaResolutionSeconds: null,
});
