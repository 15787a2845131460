//! S3 requests and answers: `bucket` builds signed GET / conditional PUT / DELETE / list requests as data,
//! `answer` classifies what the store sends back, `date` reads the store's clock from its `Date` header,
//! `list` reads ListObjectsV2 pages (through `xml`), `r2` maps those requests onto a Workers R2 binding
//! and its results back into S3 answers; `CasGuard` is a write's precondition.
//! None of them sends anything.

pub mod answer;
pub mod bucket;
pub mod date;
mod guard;
pub mod list;
pub mod r2;
mod xml;

pub use answer::{classify_get, classify_put, parse_error, GetAnswer, PutAnswer};
pub use bucket::Bucket;
pub use date::{format_http_date, parse_http_date};
pub use guard::CasGuard;
