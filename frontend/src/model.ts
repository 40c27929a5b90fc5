// The shapes of the API's answers the page reads (docs/openapi.json).

export interface SlaSummary {
  name: string
  display_name?: string | null
}

export interface ListOut<T> {
  data: T[]
  next_cursor?: string | null
}

export interface ComplianceNumbers {
  evaluated_at: string
  as_of: string
  period_start: string
  period_end: string
  target_ppm: number
  good: number
  total: number
  met: boolean
  compliance_ppm?: number | null
  budget_allowed: number
  budget_consumed: number
  budget_remaining: number
  burn_rate_milli: number
  exhaustion_secs?: number | null
  at_risk: boolean
  exhausted: boolean
}

export interface MinutePoint {
  minute: string
  good: number
  total: number
  ratio_ppm?: number | null
  maintenance?: 'whole' | 'part'
}

export interface Percentiles {
  count: number
  p50_us?: number
  p95_us?: number
  p99_us?: number
}

export interface PercentilePoint {
  minute: string
  latency: Percentiles
  ttft: Percentiles
  tpot: Percentiles
  maintenance?: 'whole' | 'part'
}

export interface ObjectiveDashboard {
  objective: string
  family: string
  /** A time-slice objective's slice length: its counts are slices. */
  slice_secs?: number
  numbers?: ComplianceNumbers | null
  minutes?: MinutePoint[]
}

export interface Redaction {
  field: string
  scope: string
}

export interface PeriodCredit {
  period_start: string
  period_end: string
  currency: string
  total: string
  credit: string
  corrections: number
}

export interface Dashboard {
  sla: string
  version: number
  from: string
  to: string
  step_secs: number
  time_zone?: string
  objectives: ObjectiveDashboard[]
  percentiles?: PercentilePoint[]
  maintenance?: { starts_at: string; ends_at: string }[]
  credits?: PeriodCredit[]
  redacted: Redaction[]
}

export interface SlaView {
  name: string
  display_name?: string | null
  definition?: { spec?: { window?: { timeZone?: string; calendar?: string; rolling?: string } } }
}

export interface Attestation {
  id: string
  objective: string
  period_start: string
  period_end: string
  status: string
  reason?: string | null
  anchor_path: string
  anchor?: { transaction?: string; chainId?: number; uid?: string } | null
  /** `development` (one party's setup: it can forge) or `ceremony`. */
  key_setup: string
}

export interface AttestationsView {
  sla: string
  attestations: Attestation[]
  next_cursor?: string
}

export interface AlertView {
  objective: string
  rule: string
  firing: boolean
  changed_at: string
  long_burn_milli: number
  short_burn_milli: number
}

export interface AlertsView {
  sla: string
  alerts: AlertView[]
  redacted: Redaction[]
}

export interface PeriodResult {
  objective: string
  period_start: string
  period_end: string
  met: boolean
  compliance_ppm?: number | null
  target_ppm: number
  good: number
  total: number
  revision: number
  /** Requests left out by maintenance. */
  excluded: number
  /** Requests that arrived after the period's late grace, as counted when
   * this revision was frozen: never in the verdict. */
  late_total: number
  /** The same count now (later arrivals included), and the good ones of it. */
  late_total_now: number
  late_good_now: number
}

export interface PeriodsView {
  sla: string
  periods: PeriodResult[]
  redacted: Redaction[]
}

/** `GET /v1/transparency/checks/latest`: the customer's last check of its
 * own request log against the transparency log. */
export interface LatestCheck {
  check: {
    id: string
    checked_at: string
    head_day?: string | null
    counts: {
      requests: number
      included: number
      disagreeing: number
      altered: number
      not_logged: number
      missing: number
    }
  } | null
}
