//! Refitting calibration curves (SPEC 4.10): for each (team, model) pair in scope, the verified
//! detections are fitted ([`crate::domain::calibration`]) and the curve replaces the stored one;
//! a pair with too few samples gets no curve (and loses an old one).

use crate::{
    clock::Clock,
    domain::calibration::{self, Bucket},
    ids::TenantId,
    store::{self, Store},
};

/// One refitted pair.
#[derive(Debug, Clone)]
pub struct Refitted {
    pub tenant: TenantId,
    pub model_id: String,
    pub samples: usize,
    pub curve: Vec<Bucket>,
}

/// Refits the pairs of `scope` (one team, or every team for `None`), of `model` only when given;
/// a team with no pair yet gets one for `default_model` (or `model`).
pub async fn refresh(
    store: &Store,
    clock: &Clock,
    scope: Option<TenantId>,
    model: Option<String>,
    default_model: String,
) -> Result<Vec<Refitted>, store::Error> {
    let now = clock.stamp();
    store
        .call(move |c| {
            let mut out = Vec::new();
            let mut pairs = store::calibration::pairs(c, scope)?;
            if let Some(t) = scope
                && pairs.is_empty()
            {
                pairs.push((t, model.clone().unwrap_or(default_model)));
            }
            for (tenant, model_id) in pairs.into_iter().filter(|(_, m)| model.as_ref().is_none_or(|x| x == m)) {
                let samples = store::calibration::samples(c, tenant, &model_id)?;
                let curve = calibration::fit(&samples).unwrap_or_default();
                store::calibration::save(c, tenant, &model_id, &curve, now)?;
                out.push(Refitted { tenant, model_id, samples: samples.len(), curve });
            }
            Ok(out)
        })
        .await
}
