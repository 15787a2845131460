//! When a claim's authority ends, decided from what this instance sees (SPEC 4.2 "losing authority is a
//! signal", SPEC 5): the pure rule that says whether an owner-record read proves the claim replaced. The
//! node (`node/book.rs`) applies it to every owner read and says so (`Event::AuthorityLost`); the other ends of a claim
//! (its lease lost, a release begun, a re-claim sent) are the book's other transitions. Reads no clock.

use crate::ownership::records::OwnerRecord;

/// Whether an answer to a read of a cell's owner record (`None`: absent) shows that this node's claim at
/// `epoch` is gone. `sent_after_claim`: the claim was recorded before the read was sent, so the read must
/// see it (S3 reads after writes are consistent). A read sent earlier may show the record as it was
/// before the claim landed: only a version at the claim's epoch or later, not naming this node there,
/// proves the claim replaced (epochs never go down).
pub fn claim_gone(me: &str, epoch: u64, sent_after_claim: bool, read: Option<&OwnerRecord>) -> bool {
    if read.is_some_and(|r| r.node == me && r.epoch == epoch) {
        return false;
    }
    sent_after_claim || read.is_some_and(|r| r.epoch >= epoch)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(node: &str, epoch: u64) -> OwnerRecord {
        OwnerRecord { node: node.into(), epoch, etag: "\"t\"".into(), nonce: None }
    }

    #[test]
    fn which_reads_end_a_claim() {
        // (record read, read sent after the claim was recorded) -> claim of "a" at epoch 5 gone?
        let cases: [(Option<OwnerRecord>, bool, bool); 10] = [
            (Some(rec("a", 5)), true, false),
            (Some(rec("a", 5)), false, false),
            (Some(rec("b", 6)), false, true), // taken over
            (Some(rec("a", 6)), false, true), // another process under this node id, or a newer claim
            (Some(rec("", 5)), false, true),  // released at our epoch by another writer
            (Some(rec("b", 4)), false, false), // sent before our claim landed: the version it replaced
            (Some(rec("b", 4)), true, true),   // sent after it: the store lost our claim
            (None, false, false),              // a create not yet seen
            (None, true, true),                // deleted after our claim
            (Some(rec("a", 4)), true, true),
        ];
        for (read, after, gone) in cases {
            assert_eq!(claim_gone("a", 5, after, read.as_ref()), gone, "{read:?} sent after: {after}");
        }
    }
}
