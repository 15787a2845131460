//! The ownership protocol: records, decisions, lease arithmetic (pure), and the driver that runs them over an Env.
