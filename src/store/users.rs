//! Accounts and their first team.

use rusqlite::{Connection, OptionalExtension, params};

use super::{Error, Result};
use crate::ids::{TenantId, UserId};

/// An account to create, with its password already hashed.
#[derive(Debug, Clone)]
pub struct NewUser {
    pub email: String,
    pub name: String,
    pub password_hash: String,
    pub is_platform_admin: bool,
}

/// What [`create_with_team`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created {
    pub user_id: UserId,
    pub tenant_id: TenantId,
}

/// Creates the user, a team of their own that they own and administer, and makes it their default,
/// all in one transaction. A taken email (case-insensitive) is a `Conflict`.
pub fn create_with_team(conn: &mut Connection, new: &NewUser, team_name: &str) -> Result<Created> {
    let tx = conn.transaction()?;
    let taken: Option<String> =
        tx.query_row("SELECT id FROM users WHERE email = ?1", [&new.email], |r| r.get(0)).optional()?;
    if taken.is_some() {
        return Err(Error::Conflict(format!("a user with email {} already exists", new.email)));
    }
    let user_id = UserId::new();
    let tenant_id = TenantId::new();
    tx.execute(
        "INSERT INTO users (id, email, name, password_hash, is_platform_admin) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![user_id, new.email, new.name, new.password_hash, new.is_platform_admin],
    )?;
    tx.execute(
        "INSERT INTO tenants (id, name, owner_user_id) VALUES (?1, ?2, ?3)",
        params![tenant_id, team_name, user_id],
    )?;
    tx.execute(
        "INSERT INTO memberships (tenant_id, user_id, role) VALUES (?1, ?2, 'admin')",
        params![tenant_id, user_id],
    )?;
    tx.execute("UPDATE users SET default_tenant_id = ?1 WHERE id = ?2", params![tenant_id, user_id])?;
    tx.commit()?;
    Ok(Created { user_id, tenant_id })
}

/// How many accounts exist.
pub fn count(conn: &Connection) -> Result<u64> {
    let n: i64 = conn.query_row("SELECT count(*) FROM users", [], |r| r.get(0))?;
    Ok(n.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing;

    fn alice(email: &str) -> NewUser {
        NewUser { email: email.into(), name: "Alice".into(), password_hash: "x".into(), is_platform_admin: true }
    }

    #[tokio::test]
    async fn creates_user_team_and_admin_membership_and_refuses_duplicates() {
        let (store, _dir) = testing::store().await;
        let created =
            store.call(|c| create_with_team(c, &alice("alice@example.org"), "Alice's team")).await.expect("create");
        let (role, owner): (String, UserId) = store
            .call(move |c| {
                Ok(c.query_row(
                    "SELECT m.role, t.owner_user_id FROM memberships m JOIN tenants t ON t.id = m.tenant_id WHERE m.user_id = ?1",
                    [created.user_id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )?)
            })
            .await
            .expect("query");
        assert_eq!(role, "admin");
        assert_eq!(owner, created.user_id);

        let dup = store.call(|c| create_with_team(c, &alice("ALICE@example.org"), "again")).await;
        assert!(matches!(dup, Err(Error::Conflict(_))), "emails are unique regardless of case");
        assert_eq!(store.call(|c| count(c)).await.expect("count"), 1, "the failed attempt left nothing behind");
    }
}
