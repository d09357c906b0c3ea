//! Share links with a record (issue 48): a person makes a link to a detection of their team, the
//! team sees its live links, and the maker or a team admin revokes one.
//!
//! - Making a link while the same person's link to the detection is live gives that link again,
//!   and a detection has at most [`MAX_LIVE`] live links, so links (and the audio they keep from
//!   retention) cannot grow without bound.
//! - A link works while it is not revoked, not expired ([`crate::auth::share::SHARE_DAYS`]) and
//!   its maker may still make it: an unblocked member of the team or platform admin
//!   ([`crate::store::share_links`]). A change of access that ends that revokes the link in its
//!   own transaction (`access_changes::settle`); deleting the account deletes the links.
//! - Retention keeps a detection's audio only while a live link exists.

use serde::Serialize;

use crate::{
    auth::share,
    clock::Clock,
    ids::{DetectionId, TenantId, UserId},
    store::{self, Store, share_links::ShareLink},
};

/// Live links a detection may have at once.
pub const MAX_LIVE: usize = 20;

#[derive(Debug, thiserror::Error)]
pub enum ShareLinkError {
    #[error("no such detection in this team")]
    DetectionNotFound,
    #[error("no such live share link for this detection")]
    LinkNotFound,
    #[error("only the person who made a share link, or a team admin, may revoke it")]
    NotYours,
    #[error("this detection already has {MAX_LIVE} live share links; revoke one first")]
    TooMany,
    #[error(transparent)]
    Store(store::Error),
}

super::from_store_error!(ShareLinkError, not_found => DetectionNotFound);

/// A live link as the detection's page lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LinkView {
    pub id: String,
    #[schema(value_type = String)]
    pub detection_id: DetectionId,
    #[schema(value_type = String)]
    pub made_by: UserId,
    pub made_by_name: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub expires_at: String,
}

impl From<ShareLink> for LinkView {
    fn from(l: ShareLink) -> Self {
        Self {
            id: l.id,
            detection_id: l.detection,
            made_by: l.maker_id,
            made_by_name: l.maker_name,
            created_at: l.created_at.to_string(),
            expires_at: l.expires_at.to_string(),
        }
    }
}

/// A link and its token.
#[derive(Debug, Clone)]
pub struct Made {
    pub link: LinkView,
    pub token: String,
    /// A new link (`false`: the maker's live link, given again).
    pub created: bool,
}

/// `maker`'s link to the team's `detection`: their live one, else a new one.
pub async fn make(
    store: &Store,
    clock: &Clock,
    secret: &str,
    tenant: TenantId,
    detection: DetectionId,
    maker: UserId,
) -> Result<Made, ShareLinkError> {
    let now = clock.stamp();
    let expires = clock.stamp_in(chrono::Duration::days(share::SHARE_DAYS));
    let (link, created) = super::in_tx(store, move |tx| {
        store::detections::get(tx, tenant, detection)?;
        let live = store::share_links::live(tx, tenant, detection, now)?;
        if let Some(own) = live.iter().find(|l| l.maker_id == maker) {
            return Ok((own.clone(), false));
        }
        if live.len() >= MAX_LIVE {
            return Err(ShareLinkError::TooMany);
        }
        let made = store::share_links::insert(tx, tenant, detection, maker, (now, expires))?;
        Ok((made.ok_or(ShareLinkError::DetectionNotFound)?, true))
    })
    .await?;
    let token = share::sign(secret, &link.id, detection);
    Ok(Made { link: link.into(), token, created })
}

/// The team's `detection`'s live links, newest first.
pub async fn list(
    store: &Store,
    clock: &Clock,
    tenant: TenantId,
    detection: DetectionId,
) -> Result<Vec<LinkView>, ShareLinkError> {
    let now = clock.stamp();
    let links = store
        .call(move |c| {
            store::detections::get(c, tenant, detection)?;
            store::share_links::live(c, tenant, detection, now)
        })
        .await?;
    Ok(links.into_iter().map(LinkView::from).collect())
}

/// Revokes `link` of the team's `detection`: its maker (`by`) or a team admin may. The link's
/// page, JSON, audio and spectrogram answer 404 at once.
pub async fn revoke(
    store: &Store,
    clock: &Clock,
    tenant: TenantId,
    detection: DetectionId,
    link: String,
    (by, by_admin): (Option<UserId>, bool),
) -> Result<(), ShareLinkError> {
    let now = clock.stamp();
    super::in_tx(store, move |tx| {
        let found = store::share_links::get_live(tx, tenant, detection, &link, now)?;
        let found = found.ok_or(ShareLinkError::LinkNotFound)?;
        if !by_admin && by != Some(found.maker_id) {
            return Err(ShareLinkError::NotYours);
        }
        store::share_links::revoke(tx, tenant, &found.id, now)?;
        Ok(())
    })
    .await
}
