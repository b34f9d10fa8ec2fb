import Foundation

/// The documents decoded, generated from a fixed seed: the same bytes every run, in the shape
/// the services send (long URLs, ISO dates, nulls where a member is absent), not picked for any
/// decoder.
public enum Payloads {
    /// A small object: 10,000 of them in one array.
    public struct Small: Decodable, Sendable {
        let id: Int
        let name: String
        let active: Bool
    }

    /// A deterministic generator (SplitMix64).
    struct Seeded {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func int(_ range: ClosedRange<Int>) -> Int { range.lowerBound + Int(next() % UInt64(range.count)) }
        mutating func chance(_ percent: Int) -> Bool { int(1...100) <= percent }
        mutating func word() -> String {
            let syllables = ["ter", "na", "gull", "swift", "kit", "tiwake", "sand", "wing", "core", "net", "http", "json"]
            return (0..<int(1...3)).map { _ in syllables[int(0...syllables.count - 1)] }.joined()
        }
        mutating func date() -> String {
            String(format: "20%02d-%02d-%02dT%02d:%02d:%02dZ", int(12...26), int(1...12), int(1...28), int(0...23), int(0...59), int(0...59))
        }
    }

    static func json(_ value: Any) -> Data {
        (try? JSONSerialization.data(withJSONObject: value)) ?? Data()
    }

    static func owner(_ random: inout Seeded) -> [String: Any] {
        let login = random.word()
        let api = "https://api.github.com/users/\(login)"
        return [
            "login": login, "id": random.int(1...90_000_000), "node_id": "MDQ6VXNlcj\(random.int(100_000...999_999))",
            "avatar_url": "https://avatars.githubusercontent.com/u/\(random.int(1...90_000_000))?v=4", "gravatar_id": "",
            "url": api, "html_url": "https://github.com/\(login)", "followers_url": api + "/followers",
            "following_url": api + "/following{/other_user}", "gists_url": api + "/gists{/gist_id}",
            "starred_url": api + "/starred{/owner}{/repo}", "subscriptions_url": api + "/subscriptions",
            "organizations_url": api + "/orgs", "repos_url": api + "/repos", "events_url": api + "/events{/privacy}",
            "received_events_url": api + "/received_events", "type": random.chance(20) ? "Organization" : "User", "site_admin": false,
        ]
    }

    /// The hypermedia links of a repository, as GitHub sends them, under the repository's API URL.
    static let links: KeyValuePairs = [
        "forks_url": "/forks", "keys_url": "/keys{/key_id}", "collaborators_url": "/collaborators{/collaborator}",
        "teams_url": "/teams", "hooks_url": "/hooks", "issue_events_url": "/issues/events{/number}", "events_url": "/events",
        "assignees_url": "/assignees{/user}", "branches_url": "/branches{/branch}", "tags_url": "/tags",
        "blobs_url": "/git/blobs{/sha}", "git_tags_url": "/git/tags{/sha}", "git_refs_url": "/git/refs{/sha}",
        "trees_url": "/git/trees{/sha}", "statuses_url": "/statuses/{sha}", "languages_url": "/languages",
        "stargazers_url": "/stargazers", "contributors_url": "/contributors", "subscribers_url": "/subscribers",
        "subscription_url": "/subscription", "commits_url": "/commits{/sha}", "git_commits_url": "/git/commits{/sha}",
        "comments_url": "/comments{/number}", "issue_comment_url": "/issues/comments{/number}", "contents_url": "/contents/{+path}",
        "compare_url": "/compare/{base}...{head}", "merges_url": "/merges", "archive_url": "/{archive_format}{/ref}",
        "downloads_url": "/downloads", "issues_url": "/issues{/number}", "pulls_url": "/pulls{/number}",
        "milestones_url": "/milestones{/number}", "notifications_url": "/notifications{?since,all,participating}",
        "labels_url": "/labels{/name}", "releases_url": "/releases{/id}", "deployments_url": "/deployments",
    ]

    public static func repositories(count: Int) -> Data {
        var random = Seeded(state: 1)
        return json((0..<count).map { _ -> [String: Any] in
            let owner = owner(&random)
            let name = random.word()
            let full = "\(owner["login"]!)/\(name)"
            let api = "https://api.github.com/repos/\(full)"
            var repository: [String: Any] = [
                "id": random.int(1...800_000_000), "node_id": "MDEwOlJlcG9zaXRvcnk\(random.int(100_000...999_999))", "name": name,
                "full_name": full, "private": false, "owner": owner, "html_url": "https://github.com/\(full)",
                "description": random.chance(80) ? (0..<random.int(4...16)).map { _ in random.word() }.joined(separator: " ") : NSNull(),
                "fork": random.chance(10), "url": api, "created_at": random.date(), "updated_at": random.date(),
                "pushed_at": random.chance(95) ? random.date() : NSNull(), "git_url": "git://github.com/\(full).git",
                "ssh_url": "git@github.com:\(full).git", "clone_url": "https://github.com/\(full).git", "svn_url": "https://github.com/\(full)",
                "homepage": random.chance(40) ? "https://\(name).example.org" : NSNull(), "size": random.int(0...900_000),
                "stargazers_count": random.int(0...90_000), "watchers_count": random.int(0...90_000),
                "language": random.chance(85) ? ["Swift", "C", "Rust", "Go", "Kotlin"][random.int(0...4)] : NSNull(),
                "has_issues": true, "has_projects": random.chance(50), "has_downloads": true, "has_wiki": random.chance(50),
                "has_pages": random.chance(20), "has_discussions": random.chance(30), "forks_count": random.int(0...9_000),
                "mirror_url": NSNull(), "archived": random.chance(5), "disabled": false, "open_issues_count": random.int(0...900),
                "license": random.chance(70) ? ["key": "mit", "name": "MIT License", "spdx_id": "MIT",
                                                "url": "https://api.github.com/licenses/mit", "node_id": "MDc6TGljZW5zZTEz"] as [String: Any] : NSNull(),
                "allow_forking": true, "is_template": false, "web_commit_signoff_required": false,
                "topics": (0..<random.int(0...6)).map { _ in random.word() }, "visibility": "public",
                "forks": random.int(0...9_000), "open_issues": random.int(0...900), "watchers": random.int(0...90_000),
                "default_branch": random.chance(80) ? "main" : "master", "score": 1.0,
            ]
            for (key, path) in links { repository[key] = api + path }
            return repository
        })
    }

    public static func profile() -> Data {
        var random = Seeded(state: 2)
        return json([
            "id": random.int(1...90_000_000), "login": random.word(), "name": random.word() + " " + random.word(), "company": NSNull(),
            "blog": "https://\(random.word()).example.org", "location": random.word(), "email": NSNull(), "hireable": NSNull(),
            "bio": (0..<12).map { _ in random.word() }.joined(separator: " "), "twitter_username": NSNull(),
            "public_repos": random.int(0...300), "public_gists": random.int(0...100), "followers": random.int(0...9_000),
            "following": random.int(0...900), "created_at": random.date(), "updated_at": random.date(),
            "avatar_url": "https://avatars.githubusercontent.com/u/1?v=4", "html_url": "https://github.com/someone", "type": "User",
            "site_admin": false, "plan_name": "pro", "disk_usage": random.int(0...900_000), "collaborators": 0,
            "two_factor_authentication": true,
        ])
    }

    public static func orders(count: Int) -> Data {
        var random = Seeded(state: 3)
        return json((0..<count).map { index -> [String: Any] in
            let subtotal = Double(random.int(100...90_000)) / 100
            return [
                "id": index + 1, "number": "T-\(random.int(100_000...999_999))", "status": ["placed", "paid", "shipped"][random.int(0...2)],
                "customer_id": random.int(1...90_000), "currency": "EUR", "subtotal": subtotal, "tax": subtotal * 0.2,
                "shipping": 4.9, "total": subtotal * 1.2 + 4.9, "item_count": random.int(1...12), "placed_at": random.date(),
                "shipped_at": random.chance(60) ? random.date() : NSNull(), "note": random.chance(20) ? random.word() : NSNull(),
                "gift": random.chance(10),
            ]
        })
    }

    public static func small(count: Int) -> Data {
        var random = Seeded(state: 4)
        return json((0..<count).map { index in ["id": index, "name": random.word(), "active": random.chance(50)] as [String: Any] })
    }
}
