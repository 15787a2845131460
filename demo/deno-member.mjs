// Runs demo/member.mjs in Deno; orders come as JSON in Deno.args[0], reports go to stdout as JSON lines.
import * as api from "celld-edge";
import { member } from "./member.mjs";

await member({ api, ...JSON.parse(Deno.args[0]), emit: (o) => console.log(JSON.stringify(o)) });
