// Runs demo/member.mjs in Node; orders come as JSON in argv[2], reports go to stdout as JSON lines.
import * as api from "celld-edge";
import { member } from "./member.mjs";

await member({ api, ...JSON.parse(process.argv[2]), emit: (o) => console.log(JSON.stringify(o)) });
