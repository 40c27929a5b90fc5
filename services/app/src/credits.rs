//! Service credits as the provider and its customers read them: the ledger (listed, exported as CSV or JSON), one period's statement, and the fee each customer pays, which tiered credits are a share of.

use chrono::{DateTime, Utc};
use serde::Serialize;
use slaproof_domain::credit::{Currency, FeeStart};
use slaproof_domain::ids::{CreditId, CustomerId, SlaId};
use slaproof_store::credits::{self, CreditEntry, EntryFilter, Fee};
use slaproof_store::{TenantTx, attestations, customers, slas};

use crate::authz::Scope;
use crate::{App, AppError, Caller, Page, PageRequest};

/// A ledger entry as answered: amounts in minor units and as decimal text,
/// names beside ids, and the computation with every input.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Credit {
    /// `cred_…`
    #[schema(value_type = String)]
    pub id: CreditId,
    /// `issued` (a period's first credit) or `corrected` (a later result
    /// changed it; `amount` is the difference).
    pub kind: String,
    pub sla: String,
    pub customer_ref: String,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    /// The SLA version whose policy applied.
    pub version: i32,
    pub revision: i32,
    /// The entry this one corrects.
    #[schema(value_type = Option<String>)]
    pub corrects: Option<CreditId>,
    pub currency: String,
    /// What this entry adds (negative when a correction lowers the credit).
    pub amount: String,
    pub amount_minor: i64,
    /// The period's credit after this entry.
    pub total: String,
    pub total_minor: i64,
    /// The formula, its inputs and every step (the domain's computation).
    #[schema(value_type = Object)]
    pub computation: serde_json::Value,
    /// The frozen results it was computed from.
    #[schema(value_type = Object)]
    pub results: serde_json::Value,
    /// The attestations of the results it was computed from, one per
    /// objective result (`GET /v1/attestations/{id}`), as they stand now.
    pub attestations: Vec<CreditAttestation>,
    pub created_at: DateTime<Utc>,
}

/// The attestation of one result a credit was computed from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct CreditAttestation {
    pub objective: String,
    /// The revision of the objective's result.
    pub revision: i32,
    pub id: String,
    /// `pending`, `proven`, `anchored` or `not_provable`.
    pub status: String,
    /// keccak-256 of the anchored statement, once proven.
    pub statement_id: Option<String>,
}

/// Which credits to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreditQuery {
    /// A customer's external reference (a customer's user reads its own).
    pub customer_ref: Option<String>,
    /// An SLA name.
    pub sla: Option<String>,
    /// Periods starting at or after.
    pub from: Option<DateTime<Utc>>,
    /// Periods starting before.
    pub to: Option<DateTime<Utc>>,
}

/// A customer's fee as answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct CustomerFee {
    /// From when it applies: for a fee from a date, that date's midnight
    /// UTC (see `effective_on`).
    pub effective_from: DateTime<Utc>,
    /// The date it applies from, read in each SLA's time zone, when it
    /// was recorded as a date.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = Date)]
    pub effective_on: Option<chrono::NaiveDate>,
    pub currency: String,
    /// Per SLA period, as decimal text in the currency's unit.
    pub amount: String,
    pub amount_minor: i64,
    pub created_at: DateTime<Utc>,
    pub created_by: String,
}

/// A fee to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewFee {
    /// A date (each SLA's periods starting on or after it, in the SLA's
    /// time zone) or an instant.
    pub effective_from: FeeStart,
    /// ISO 4217 (`EUR`).
    pub currency: String,
    /// Decimal text in the currency's unit (`1200.00`), exact to the minor unit.
    pub amount: String,
    /// The minor-unit exponent, required for a code slaproof does not know.
    pub minor_units: Option<u8>,
}

/// A customer's statement for one SLA period: every entry, the last one's
/// computation, and the total owed.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct CreditStatement {
    pub sla: String,
    pub customer_ref: String,
    pub customer_name: String,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    pub currency: String,
    /// What the period's credit comes to after every entry.
    pub total: String,
    pub total_minor: i64,
    /// Every ledger entry of the period, oldest first.
    pub entries: Vec<Credit>,
}

/// A fee as given: its currency and its amount in minor units, each
/// refused by its field (an unknown code without `minor_units`, an amount
/// finer than the minor unit, a negative fee).
pub(crate) fn fee_amount(
    currency: &str,
    minor_units: Option<u8>,
    amount: &str,
) -> Result<(Currency, i64), AppError> {
    let currency = Currency::new(currency.trim(), minor_units)
        .map_err(|e| AppError::invalid("currency", e.to_string()))?;
    let amount_minor = currency
        .parse_amount(amount.trim())
        .map_err(|e| AppError::invalid("amount", e.to_string()))?;
    if amount_minor < 0 {
        return Err(AppError::invalid("amount", "a fee cannot be negative"));
    }
    Ok((currency, amount_minor))
}

fn fee_view(fee: Fee) -> Result<CustomerFee, AppError> {
    let amount = fee.currency()?.amount_text(fee.amount_minor);
    Ok(CustomerFee {
        effective_from: fee.effective_from,
        effective_on: fee.effective_on,
        currency: fee.currency,
        amount,
        amount_minor: fee.amount_minor,
        created_at: fee.created_at,
        created_by: fee.created_by,
    })
}

async fn customer_by_ref(tx: &mut TenantTx, reference: &str) -> Result<CustomerId, AppError> {
    Ok(customers::find_by_ref(tx, reference)
        .await?
        .ok_or_else(|| AppError::NotFound {
            what: "customer",
            key: reference.to_owned(),
        })?
        .id)
}

/// The attestations of the objective results `entry` names (`results`:
/// objective and revision each; a composite's result has none of its own).
async fn credit_attestations(
    tx: &mut TenantTx,
    entry: &CreditEntry,
) -> Result<Vec<CreditAttestation>, AppError> {
    let wanted: Vec<(String, i64)> = entry
        .results
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| Some((r["objective"].as_str()?.to_owned(), r["revision"].as_i64()?)))
        .collect();
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    Ok(attestations::list(tx, entry.sla, Some(entry.period_start))
        .await?
        .into_iter()
        .filter(|a| {
            wanted
                .iter()
                .any(|(o, r)| *o == a.objective && *r == i64::from(a.revision))
        })
        .map(|a| CreditAttestation {
            objective: a.objective,
            revision: a.revision,
            id: a.id.to_string(),
            status: a.status,
            statement_id: a.statement_id,
        })
        .collect())
}

/// Names for ids, read once per answer.
#[derive(Default)]
struct Names {
    slas: std::collections::HashMap<SlaId, String>,
    customers: std::collections::HashMap<CustomerId, String>,
}

impl Names {
    async fn view(&mut self, tx: &mut TenantTx, entry: CreditEntry) -> Result<Credit, AppError> {
        use std::collections::hash_map::Entry;
        if let Entry::Vacant(slot) = self.slas.entry(entry.sla) {
            slot.insert(slas::name_of(tx, entry.sla).await?);
        }
        if let Entry::Vacant(slot) = self.customers.entry(entry.customer) {
            slot.insert(customers::find(tx, entry.customer).await?.external_ref);
        }
        let currency = entry.currency()?;
        let attestations = credit_attestations(tx, &entry).await?;
        Ok(Credit {
            id: entry.id,
            kind: entry.kind.as_str().to_owned(),
            sla: self.slas[&entry.sla].clone(),
            customer_ref: self.customers[&entry.customer].clone(),
            period_start: entry.period_start,
            period_end: entry.period_end,
            version: entry.version,
            revision: entry.revision,
            corrects: entry.corrects,
            amount: currency.amount_text(entry.amount_minor),
            amount_minor: entry.amount_minor,
            total: currency.amount_text(entry.total_minor),
            total_minor: entry.total_minor,
            currency: entry.currency,
            computation: entry.computation,
            results: entry.results,
            attestations,
            created_at: entry.created_at,
        })
    }
}

impl App {
    /// The ledger: every customer's credits for the provider, its own for a
    /// customer's user (`sla:read:credits`), in the order written.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn list_credits(
        &self,
        caller: &Caller,
        query: &CreditQuery,
        page: &PageRequest,
    ) -> Result<Page<Credit>, AppError> {
        caller.require(Scope::SlaReadCredits)?;
        let keyset = page.keyset()?;
        if let Some(after) = &keyset.after
            && after.parse::<CreditId>().is_err()
        {
            return Err(AppError::invalid(
                "cursor",
                "is not a cursor this listing gave",
            ));
        }
        let query = query.clone();
        self.in_tx(caller, async |tx| {
            let filter = self.filter_of(tx, caller, &query).await?;
            let Some(filter) = filter else {
                return Ok(Page {
                    items: Vec::new(),
                    next_cursor: None,
                });
            };
            let rows: Vec<(String, CreditEntry)> = credits::list(tx, &filter, &keyset)
                .await?
                .into_iter()
                .map(|e| (e.id.to_string(), e))
                .collect();
            let page = Page::of(rows, &keyset, |(key, _)| key.as_str());
            let mut names = Names::default();
            let mut items = Vec::with_capacity(page.items.len());
            for (_, entry) in page.items {
                items.push(names.view(tx, entry).await?);
            }
            Ok(Page {
                items,
                next_cursor: page.next_cursor,
            })
        })
        .await
    }

    /// One ledger entry.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn get_credit(&self, caller: &Caller, id: &str) -> Result<Credit, AppError> {
        caller.require(Scope::SlaReadCredits)?;
        let not_found = || AppError::NotFound {
            what: "credit",
            key: id.to_owned(),
        };
        let id: CreditId = id.parse().map_err(|_| not_found())?;
        self.in_tx(caller, async |tx| {
            let entry = credits::find(tx, id).await?;
            if caller.customer().is_some_and(|own| own != entry.customer) {
                return Err(not_found());
            }
            // An embed token for one SLA's dashboard reads that SLA's
            // credits only, as its lists do.
            if let Some(only) = caller.only_sla()
                && slaproof_store::slas::name_of(tx, entry.sla).await? != only
            {
                return Err(not_found());
            }
            Names::default().view(tx, entry).await
        })
        .await
    }

    /// Every credit the query reads, for a billing system: at most
    /// `MAX_EXPORT` entries, oldest first.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn export_credits(
        &self,
        caller: &Caller,
        query: &CreditQuery,
    ) -> Result<Vec<Credit>, AppError> {
        let mut all = Vec::new();
        let mut request = PageRequest {
            cursor: None,
            limit: Some(crate::page::MAX_PAGE),
        };
        loop {
            let page = self.list_credits(caller, query, &request).await?;
            all.extend(page.items);
            match page.next_cursor {
                Some(cursor) if all.len() < MAX_EXPORT => request.cursor = Some(cursor),
                _ => {
                    all.truncate(MAX_EXPORT);
                    return Ok(all);
                }
            }
        }
    }

    /// The credit statement of one customer's SLA for the period starting
    /// at `period_start`: every entry and the total owed.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn credit_statement(
        &self,
        caller: &Caller,
        sla: &str,
        period_start: DateTime<Utc>,
    ) -> Result<CreditStatement, AppError> {
        caller.require(Scope::SlaReadCredits)?;
        self.in_tx(caller, async |tx| {
            // The SLA as the caller may see it (a customer's own, an embed
            // token's one): any other is "not found".
            let (stored, _) = self.visible_sla(tx, caller, sla, None).await?;
            let not_found = || AppError::NotFound {
                what: "credit statement",
                key: format!("{sla} {}", period_start.to_rfc3339()),
            };
            let customer = stored.customer.ok_or_else(not_found)?;
            let entries = credits::period_entries(tx, stored.id, customer, period_start).await?;
            let last = entries.last().cloned().ok_or_else(not_found)?;
            let holder = customers::find(tx, customer).await?;
            let mut names = Names::default();
            let mut views = Vec::with_capacity(entries.len());
            for entry in entries {
                views.push(names.view(tx, entry).await?);
            }
            let total = views.last().map(|v| v.total.clone()).unwrap_or_default();
            Ok(CreditStatement {
                sla: sla.to_owned(),
                customer_ref: holder.external_ref,
                customer_name: holder.name,
                period_start: last.period_start,
                period_end: last.period_end,
                currency: last.currency,
                total,
                total_minor: last.total_minor,
                entries: views,
            })
        })
        .await
    }

    /// Asks compensation to compute the SLA's credit for a closed period
    /// again, from the results in force (after a fee was recorded, say).
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn recompute_credit(
        &self,
        caller: &Caller,
        sla: &str,
        period_start: DateTime<Utc>,
    ) -> Result<(), AppError> {
        caller.require_provider(Scope::SlaWrite)?;
        self.in_tx(caller, async |tx| {
            let stored = slas::find(tx, sla, None).await?;
            if credits::frozen_results(tx, stored.id, period_start)
                .await?
                .is_empty()
            {
                return Err(AppError::invalid(
                    "period_start",
                    format!(
                        "no closed period of {sla} starts at {}",
                        period_start.to_rfc3339()
                    ),
                ));
            }
            Ok(credits::request(tx, stored.id, period_start).await?)
        })
        .await
    }

    /// Records the fee a customer pays per SLA period from a date (read in
    /// each SLA's time zone) or an instant on (`customer:write`). A later
    /// price is a new fee; the history stays. A fee never reaches back
    /// into a period already credited (409): a
    /// price change after a close takes effect from a later period, so
    /// that no recompute or re-close rewrites a credit the customer was
    /// told. Recorded on the audit trail of each of the customer's SLAs.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn set_customer_fee(
        &self,
        caller: &Caller,
        customer_ref: &str,
        new: NewFee,
    ) -> Result<CustomerFee, AppError> {
        caller.require_provider(Scope::CustomerWrite)?;
        let (currency, amount_minor) = fee_amount(&new.currency, new.minor_units, &new.amount)?;
        let by = caller.principal.subject.clone();
        self.in_tx(caller, async |tx| {
            let customer = customer_by_ref(tx, customer_ref).await?;
            if let FeeStart::Date(date) = new.effective_from
                && let Some(first) = credits::first_date_not_credited(tx, customer).await?
                && date < first
            {
                return Err(AppError::Conflict(format!(
                    "the customer's periods up to {first} (in their SLAs' time zones) were credited already on the fee then on file: a new fee takes effect from {first} or later"
                )));
            }
            if let FeeStart::Instant(at) = new.effective_from
                && let Some((start, end)) = credits::last_credited(tx, customer).await?
                && at < end
            {
                return Err(AppError::Conflict(format!(
                    "the period from {} to {} was credited already on the fee then on file: a new fee takes effect at {} or later",
                    start.to_rfc3339(),
                    end.to_rfc3339(),
                    end.to_rfc3339()
                )));
            }
            let stored = credits::add_fee(
                tx,
                &Fee {
                    customer,
                    effective_from: new.effective_from.utc_key(),
                    effective_on: new.effective_from.date(),
                    currency: currency.code().to_owned(),
                    minor_units: i16::from(currency.exponent()),
                    amount_minor,
                    created_at: Utc::now(),
                    created_by: by.clone(),
                },
            )
            .await
            .map_err(|e| match e {
                slaproof_store::StoreError::Conflict { .. } => AppError::Conflict(format!(
                    "a fee from {} is on file already: record the new price from another date or instant",
                    new.effective_from
                )),
                other => other.into(),
            })?;
            let details = serde_json::json!({
                "customer": customer_ref,
                "effective_from": stored.effective_from,
                "effective_on": stored.effective_on,
                "currency": stored.currency,
                "amount_minor": stored.amount_minor,
            });
            for sla in slaproof_store::slas::of_customer(tx, customer).await? {
                crate::audit::record(tx, caller, sla, "fee.recorded", &details).await?;
            }
            fee_view(stored)
        })
        .await
    }

    /// A customer's fees, oldest first.
    #[tracing::instrument(skip(self, caller), fields(tenant = %caller.tenant()))]
    pub async fn customer_fees(
        &self,
        caller: &Caller,
        customer_ref: &str,
    ) -> Result<Vec<CustomerFee>, AppError> {
        caller.require_provider(Scope::CustomerRead)?;
        self.in_tx(caller, async |tx| {
            let customer = customer_by_ref(tx, customer_ref).await?;
            credits::fees(tx, customer)
                .await?
                .into_iter()
                .map(fee_view)
                .collect()
        })
        .await
    }

    /// The store filter for a query, confined to what the caller may see
    /// (its customer's credits; an embed token's one SLA); `None` when it
    /// can match nothing (another customer's reference or SLA).
    async fn filter_of(
        &self,
        tx: &mut TenantTx,
        caller: &Caller,
        query: &CreditQuery,
    ) -> Result<Option<EntryFilter>, AppError> {
        let mut filter = EntryFilter {
            from: query.from,
            to: query.to,
            ..EntryFilter::default()
        };
        if let Some(reference) = &query.customer_ref {
            match customers::find_by_ref(tx, reference).await? {
                Some(c) => filter.customer = Some(c.id),
                None => return Ok(None),
            }
        }
        if let Some(own) = caller.customer() {
            if filter.customer.is_some_and(|c| c != own) {
                return Ok(None);
            }
            filter.customer = Some(own);
        }
        // The SLA asked for, or the one an embed token is for, as the
        // caller may see it.
        if let Some(name) = query.sla.as_deref().or(caller.only_sla()) {
            match self.visible_sla(tx, caller, name, None).await {
                Ok((s, _)) => filter.sla = Some(s.id),
                Err(AppError::NotFound { .. }) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        Ok(Some(filter))
    }
}

/// The most entries one export answers.
pub const MAX_EXPORT: usize = 100_000;

/// Credits as CSV for a billing system: one line per entry, amounts as
/// decimal text and in minor units, RFC 4180 quoting.
pub fn credits_csv(credits: &[Credit]) -> String {
    let mut out = String::from(
        "id,kind,sla,customer_ref,period_start,period_end,version,revision,corrects,currency,amount,amount_minor,total,total_minor,created_at\r\n",
    );
    for c in credits {
        let fields = [
            c.id.to_string(),
            c.kind.clone(),
            c.sla.clone(),
            c.customer_ref.clone(),
            c.period_start.to_rfc3339(),
            c.period_end.to_rfc3339(),
            c.version.to_string(),
            c.revision.to_string(),
            c.corrects.map(|x| x.to_string()).unwrap_or_default(),
            c.currency.clone(),
            c.amount.clone(),
            c.amount_minor.to_string(),
            c.total.clone(),
            c.total_minor.to_string(),
            c.created_at.to_rfc3339(),
        ];
        let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        out.push_str(&line.join(","));
        out.push_str("\r\n");
    }
    out
}

fn csv_field(text: &str) -> String {
    // A leading =, +, -, @, tab or carriage return makes a formula of a
    // cell in a spreadsheet (CSV injection); amounts are numbers and stay
    // as they are, anything else is quoted and prefixed with '.
    let risky = text.starts_with(['=', '+', '-', '@', '\t', '\r']) && text.parse::<f64>().is_err();
    if risky || text.contains([',', '"', '\r', '\n']) {
        let text = if risky {
            format!("'{text}")
        } else {
            text.to_owned()
        };
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}
