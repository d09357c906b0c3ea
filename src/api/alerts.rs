//! Alerts (SPEC 4.6): the team's raised alerts, newest first, and acknowledging one. Rules raise
//! them (`usecases::alerting`); rules and channels are managed in `api::alert_rules`.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ApiError, Path, Query, views::Page};
use crate::{
    auth::{Audit, ClientIp, Viewer},
    state::AppState,
    store::{self, alerts::Alert},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(acknowledge))
}

#[derive(Debug, Deserialize)]
struct ListQuery {
    /// `true` or `false`; both when left out.
    acknowledged: Option<String>,
}

#[utoipa::path(
    get, path = "/alerts", tag = tags::ALERTS,
    description = "Viewer+. The team's alerts; `?acknowledged=true|false`, paginated: `{alerts, total}`.",
    responses((status = 200, description = "`{alerts, total}`", body = Object), err::BadRequest, err::Auth)
)]
async fn list(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Query(q): Query<ListQuery>,
    Query(page): Query<Page>,
) -> Result<axum::Json<Value>, ApiError> {
    let page = page.checked()?;
    let acknowledged = match q.acknowledged.as_deref() {
        None | Some("") => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(other) => {
            return Err(ApiError::BadRequest(
                "invalid_acknowledged",
                format!("acknowledged must be true or false, not {other:?}"),
            ));
        }
    };
    let tenant = access.tenant_id;
    let (alerts, total) =
        state.store.call(move |c| store::alerts::list(c, tenant, acknowledged, page.limit, page.offset)).await?;
    Ok(axum::Json(json!({ "alerts": alerts, "total": total })))
}

#[utoipa::path(
    post, path = "/alerts/{id}/acknowledge", tag = tags::ALERTS,
    description = "Viewer+. Marks an alert acknowledged.",
    params(("id" = uuid::Uuid, Path, description = "alert id")),
    responses((status = 200, description = "the alert", body = Object), err::Auth, err::NotFound)
)]
async fn acknowledge(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Viewer(access): Viewer,
    Path(id): Path<uuid::Uuid>,
) -> Result<axum::Json<Alert>, ApiError> {
    let (tenant, user) = (access.tenant_id, access.ctx.user_id());
    let alert = crate::usecases::alerting::acknowledge(&state.store, &state.clock, tenant, id.to_string(), user)
        .await
        .map_err(super::not_found("alert_not_found", "no such alert"))?;
    Audit::new("alert.acknowledged").actor(&access.ctx).tenant(tenant).target("alert", id).ip(&ip).write(&state).await;
    Ok(axum::Json(alert))
}
