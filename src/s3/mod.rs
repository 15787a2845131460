//! S3 requests and answers: `bucket` builds signed GET / conditional PUT / DELETE requests as data,
//! `answer` classifies what the store sends back. Neither sends anything.

pub mod answer;
pub mod bucket;

pub use answer::{classify_get, classify_put, parse_error, GetAnswer, PutAnswer};
pub use bucket::Bucket;
