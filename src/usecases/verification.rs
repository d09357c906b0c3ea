//! What people do to verify detections: vote (one vote each, replaced on a second vote, deciding the
//! consensus) and remove comments. Every write is scoped to the caller's team in SQL, so another
//! team's detection or comment is "not found", whatever id is sent.

use crate::{
    clock::Clock,
    domain::consensus::{Status, Vote},
    ids::{DetectionId, TenantId, UserId},
    store::{self, Store, votes::Tally},
};

/// The consensus after a vote, and the counts behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    pub status: Status,
    pub tally: Tally,
}

#[derive(Debug, thiserror::Error)]
pub enum VoteError {
    #[error("no such detection")]
    DetectionNotFound,
    #[error(transparent)]
    Store(store::Error),
}

super::from_store_error!(VoteError, not_found => DetectionNotFound);

/// Records `user`'s vote on `tenant`'s detection (replacing an earlier one) and settles the
/// consensus, in one transaction. A vote is always accepted, whatever the person's voting mode:
/// the mode only decides what the dashboard offers first.
pub async fn vote(
    store: &Store,
    clock: &Clock,
    tenant: TenantId,
    detection: DetectionId,
    user: UserId,
    vote: Vote,
) -> Result<Verdict, VoteError> {
    let now = clock.stamp();
    let (status, tally) = store.call(move |c| store::votes::cast(c, tenant, detection, user, vote, None, now)).await?;
    Ok(Verdict { status, tally })
}

#[derive(Debug, thiserror::Error)]
pub enum CommentError {
    #[error("no such comment")]
    NotFound,
    #[error("only the author or a team admin may delete it")]
    NotYours,
    #[error(transparent)]
    Store(store::Error),
}

super::from_store_error!(CommentError, not_found => NotFound);

/// Deletes a comment on `tenant`'s detection: its author may, and so may a team admin.
pub async fn delete_comment(
    store: &Store,
    tenant: TenantId,
    detection: DetectionId,
    comment: String,
    by: Option<UserId>,
    by_admin: bool,
) -> Result<(), CommentError> {
    store
        .call(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let Some(found) = store::comments::get(&tx, tenant, detection, &comment)? else {
                return Ok(Err(CommentError::NotFound));
            };
            let own = found.user_id.is_some() && found.user_id == by;
            if !own && !by_admin {
                return Ok(Err(CommentError::NotYours));
            }
            store::comments::delete(&tx, tenant, detection, &comment)?;
            tx.commit()?;
            Ok(Ok(()))
        })
        .await?
}

/// Adds `user`'s comment (already checked: 1 to the limit of characters) to `tenant`'s detection.
pub async fn add_comment(
    store: &Store,
    clock: &Clock,
    tenant: TenantId,
    detection: DetectionId,
    user: UserId,
    text: String,
) -> Result<store::comments::Comment, store::Error> {
    let now = clock.stamp();
    store.call(move |c| store::comments::add(c, tenant, detection, user, &text, now)).await
}

/// Records `user`'s annotation (a time-frequency box with its vote) on `tenant`'s detection and
/// settles the consensus, in one transaction.
pub async fn annotate(
    store: &Store,
    clock: &Clock,
    tenant: TenantId,
    detection: DetectionId,
    user: UserId,
    new: store::annotations::NewAnnotation,
) -> Result<(store::annotations::Annotation, Status, Tally), store::Error> {
    let now = clock.stamp();
    store.call(move |c| store::annotations::add(c, tenant, detection, user, &new, now)).await
}

#[cfg(test)]
mod tests {
    //! Tenant isolation at the bottom: a write that names another team's detection or comment
    //! changes nothing, even when the caller skipped the handler's lookup.
    use super::*;
    use crate::store::testing;

    /// Two teams, each with one person and one detection: (team, person, detection) of A, then of B.
    async fn two_teams(store: &Store) -> ((TenantId, UserId, DetectionId), (TenantId, UserId, DetectionId)) {
        store
            .call(|c| {
                let mut made = Vec::new();
                for who in ["a", "b"] {
                    let (team, person) = testing::team(c, who)?;
                    made.push((team, person, crate::store::detections::testing::one(c, team)?));
                }
                Ok((made[0], made[1]))
            })
            .await
            .expect("fixture")
    }

    fn status_of(store: &Store, id: DetectionId) -> String {
        store
            .call_blocking(|c| {
                Ok(c.query_row("SELECT verification_status FROM detections WHERE id = ?1", [id], |r| r.get(0))?)
            })
            .expect("status")
    }

    #[tokio::test]
    async fn a_vote_naming_another_teams_detection_writes_nothing() {
        let (store, _dir) = testing::store().await;
        let clock = Clock::default();
        let ((a, user_a, _), (_, _, detection_b)) = two_teams(&store).await;
        // Team A's user names team B's detection while acting in team A.
        let refused = vote(&store, &clock, a, detection_b, user_a, Vote::Reject).await;
        assert!(matches!(refused, Err(VoteError::DetectionNotFound)), "{refused:?}");
        assert_eq!(status_of(&store, detection_b), "unverified");
        let votes: i64 = store
            .call_blocking(|c| Ok(c.query_row("SELECT count(*) FROM verification_votes", [], |r| r.get(0))?))
            .expect("count");
        assert_eq!(votes, 0);
        // The store function itself refuses too (no handler lookup in front of it).
        let direct = store
            .call(move |c| store::votes::cast(c, a, detection_b, user_a, Vote::Confirm, None, clock.stamp()))
            .await;
        assert!(matches!(direct, Err(store::Error::NotFound)));
        assert_eq!(status_of(&store, detection_b), "unverified");
    }

    #[tokio::test]
    async fn a_comment_of_another_team_cannot_be_deleted() {
        let (store, _dir) = testing::store().await;
        let ((a, user_a, detection_a), (b, user_b, detection_b)) = two_teams(&store).await;
        let theirs = store
            .call(move |c| store::comments::add(c, b, detection_b, user_b, "mine", Clock::default().stamp()))
            .await
            .expect("comment");
        // An admin of team A, naming B's comment under B's detection or under A's own.
        for detection in [detection_b, detection_a] {
            let refused = delete_comment(&store, a, detection, theirs.id.clone(), Some(user_a), true).await;
            assert!(matches!(refused, Err(CommentError::NotFound)), "{refused:?}");
        }
        let id = theirs.id.clone();
        let direct = store.call(move |c| store::comments::delete(c, a, detection_b, &id)).await;
        assert!(matches!(direct, Err(store::Error::NotFound)));
        let left = store.call(move |c| store::comments::list(c, b, detection_b)).await.expect("list");
        assert_eq!(left.len(), 1, "B's comment is still there");
    }
}
