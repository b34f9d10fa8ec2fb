#!/usr/bin/env python3
# Writes Sources/JSONAB/Models.swift: decoding models in the shape of real APIs (GitHub's
# repositories and users, a shop's orders), written without regard to any decoder. Run from
# Benchmarks/: python3 json/generate-models.py
repo = [("id","Int"),("node_id","String"),("name","String"),("full_name","String"),("private","Bool"),("owner","Owner"),
("html_url","String"),("description","String?"),("fork","Bool"),("url","String"),("forks_url","String"),("keys_url","String"),
("collaborators_url","String"),("teams_url","String"),("hooks_url","String"),("issue_events_url","String"),("events_url","String"),
("assignees_url","String"),("branches_url","String"),("tags_url","String"),("blobs_url","String"),("git_tags_url","String"),
("git_refs_url","String"),("trees_url","String"),("statuses_url","String"),("languages_url","String"),("stargazers_url","String"),
("contributors_url","String"),("subscribers_url","String"),("subscription_url","String"),("commits_url","String"),
("git_commits_url","String"),("comments_url","String"),("issue_comment_url","String"),("contents_url","String"),
("compare_url","String"),("merges_url","String"),("archive_url","String"),("downloads_url","String"),("issues_url","String"),
("pulls_url","String"),("milestones_url","String"),("notifications_url","String"),("labels_url","String"),("releases_url","String"),
("deployments_url","String"),("created_at","String"),("updated_at","String"),("pushed_at","String?"),("git_url","String"),
("ssh_url","String"),("clone_url","String"),("svn_url","String"),("homepage","String?"),("size","Int"),("stargazers_count","Int"),
("watchers_count","Int"),("language","String?"),("has_issues","Bool"),("has_projects","Bool"),("has_downloads","Bool"),
("has_wiki","Bool"),("has_pages","Bool"),("has_discussions","Bool"),("forks_count","Int"),("mirror_url","String?"),("archived","Bool"),
("disabled","Bool"),("open_issues_count","Int"),("license","License?"),("allow_forking","Bool"),("is_template","Bool"),
("web_commit_signoff_required","Bool"),("topics","[String]"),("visibility","String"),("forks","Int"),("open_issues","Int"),
("watchers","Int"),("default_branch","String"),("score","Double")]
owner = [("login","String"),("id","Int"),("node_id","String"),("avatar_url","String"),("gravatar_id","String"),("url","String"),
("html_url","String"),("followers_url","String"),("following_url","String"),("gists_url","String"),("starred_url","String"),
("subscriptions_url","String"),("organizations_url","String"),("repos_url","String"),("events_url","String"),
("received_events_url","String"),("type","String"),("site_admin","Bool")]
license = [("key","String"),("name","String"),("spdx_id","String?"),("url","String?"),("node_id","String")]
profile = [("id","Int"),("login","String"),("name","String?"),("company","String?"),("blog","String?"),("location","String?"),
("email","String?"),("hireable","Bool?"),("bio","String?"),("twitter_username","String?"),("public_repos","Int"),("public_gists","Int"),
("followers","Int"),("following","Int"),("created_at","String"),("updated_at","String"),("avatar_url","String"),("html_url","String"),
("type","String"),("site_admin","Bool"),("plan_name","String?"),("disk_usage","Int?"),("collaborators","Int?"),("two_factor_authentication","Bool")]
order = [("id","Int"),("number","String"),("status","String"),("customer_id","Int"),("currency","String"),("subtotal","Double"),
("tax","Double"),("shipping","Double"),("total","Double"),("item_count","Int"),("placed_at","String"),("shipped_at","String?"),
("note","String?"),("gift","Bool")]
summary_keys = ["id","name","full_name","private","html_url","description","fork","stargazers_count","language","forks_count","topics","default_branch"]

def camel(key):
    parts = key.split('_')
    return parts[0] + ''.join(part[:1].upper() + part[1:] for part in parts[1:])

def swift_name(key):
    name = camel(key)
    return '`' + name + '`' if name in ('private', 'default', 'type') else name

def struct(name, fields, doc, keys=True, rename=None):
    out = ['/// ' + doc, f'struct {name}: Decodable, Sendable {{']
    out += [f'    let {swift_name(k)}: {(rename or {}).get(t, t)}' for k, t in fields]
    if keys:
        out += ['', '    enum CodingKeys: String, CodingKey {']
        out += [f'        case {swift_name(k)} = "{k}"' if camel(k) != k else f'        case {swift_name(k)}' for k, _ in fields]
        out.append('    }')
    out.append('}')
    return '\n'.join(out)

summary = [(k, t) for k, t in repo if k in summary_keys]
lenient = ['/// The repository summary decoded by hand, `try?` for each optional member, as many codebases do.',
           'struct LenientSummary: Decodable, Sendable {']
lenient += [f'    let {swift_name(k)}: {t}' for k, t in summary]
lenient += ['', '    init(from decoder: any Decoder) throws {',
            '        let container = try decoder.container(keyedBy: RepositorySummary.CodingKeys.self)']
for k, t in summary:
    n = swift_name(k)
    lenient.append(f'        {n} = try? container.decode({t[:-1]}.self, forKey: .{n})' if t.endswith('?')
                   else f'        {n} = try container.decode({t}.self, forKey: .{n})')
lenient += ['    }', '}']

blocks = [
    '// Generated by Benchmarks/json/generate-models.py: models in the shape of real APIs (GitHub\'s\n'
    '// repositories and users, a shop\'s orders), written without regard to any decoder.',
    struct('Owner', owner, "A repository's owner, as GitHub sends it: 18 members."),
    struct('License', license, 'A license: 5 members, some optional.'),
    struct('Repository', repo, 'A repository, every member decoded: 80 members, snake_case keys mapped by CodingKeys.'),
    struct('RepositorySummary', summary, 'The same, 12 members kept: the rest are skipped.'),
    struct('CamelOwner', owner, 'The owner, for `.convertFromSnakeCase`.', keys=False),
    struct('CamelLicense', license, 'The license, for `.convertFromSnakeCase`.', keys=False),
    struct('CamelRepository', repo, 'The repository, every member, for `.convertFromSnakeCase`: no CodingKeys.',
           keys=False, rename={'Owner': 'CamelOwner', 'License?': 'CamelLicense?'}),
    struct('Profile', profile, 'A user profile: 24 members, many optional.'),
    struct('Order', order, "A shop's order: 14 members."),
    '\n'.join(lenient),
]
open('Sources/JSONAB/Models.swift', 'w').write('\n\n'.join(blocks) + '\n')
