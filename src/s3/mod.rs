//! S3 requests and answers: building signed GET / conditional PUT requests as data, and classifying what the store answers.
