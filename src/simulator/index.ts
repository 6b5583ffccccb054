/**
 * A faithful fake of the Support Ticket API over real HTTP, for tests, `ticket-mirror demo`,
 * `ticket-mirror simulator` and the benchmark. `startSimulator` is the entry point; the model works without HTTP.
 */
export { startSimulator, type RunningSimulator, type SimulatorOptions } from './server.ts';
export { SimulatorAccount, type AccountSpec, type AccountSummary } from './accounts.ts';
export {
  SimulatorModel,
  UnknownTicketError,
  type AgentChoice,
  type AgentReplyOptions,
  type InboundMessageOptions,
  type NewTicketOptions,
  type SimulatorModelOptions,
} from './model.ts';
export { FaultInjector, FAULT_KINDS, type Fault, type FaultKind, type FaultSpec, type ScriptedAnswer } from './faults.ts';
export { RateLimiter, type RateDecision, type RateLimits } from './rateLimiter.ts';
export type { RequestLogEntry } from './api.ts';
export { ATTACHMENT_URL_TTL_MS, AttachmentSigner } from './signing.ts';
export {
  activityWeight,
  createActivityDriver,
  createFleetActivityDriver,
  DEFAULT_RATES_PER_DAY,
  type ActivityAccount,
  type ActivityDriver,
  type FleetActivityDriver,
  type FleetActivityOptions,
  type FleetMutation,
  type ActivityOp,
  type ActivityOptions,
  type ActivityRates,
  type AppliedMutation,
} from './activity.ts';
export { runSimulatorCommand, type SimulatorCommandOptions } from './cli.ts';
export {
  PRIORITIES,
  TICKET_STATUSES,
  type Agent,
  type Attachment,
  type AttachmentTruth,
  type Message,
  type MessageTruth,
  type MessageType,
  type Priority,
  type ReplyResult,
  type TicketDetail,
  type TicketGroup,
  type TicketListItem,
  type TicketStatus,
  type TicketTruth,
  type Widget,
} from './types.ts';
