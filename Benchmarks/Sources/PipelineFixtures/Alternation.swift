import Foundation

/// Two workloads measured in turns in one process, so that both see the same machine: what the
/// `…AB` harnesses run, steadier on a shared machine than separate benchmark runs.
public enum Alternation {
    /// Wall and CPU nanoseconds per request of one round; `loop` is the CPU of libcurl loops'
    /// threads alone (`tern.curl`), the bound with many requests in flight.
    public struct Sample: Sendable {
        public let wall: Double
        public let cpu: Double
        public var loop: Double = 0
    }

    /// The nanoseconds the threads named `name` have run, from the scheduler's own count
    /// (`/proc/self/task/*/schedstat`), exact where `clock()` has the whole process's.
    public static func threadTime(named name: String) -> Double {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.reduce(0) { total, task in
            guard let comm = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8),
                  comm.trimmingCharacters(in: .whitespacesAndNewlines) == name,
                  let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/schedstat", encoding: .utf8),
                  let ran = stat.split(separator: " ").first.flatMap({ Double($0) }) else { return total }
            return total + ran
        }
    }

    /// Runs `body`, which sends `count` requests; returns the cost per request. CPU time is the
    /// whole process's, every thread included.
    public static func measure(_ count: Int, _ body: () async throws -> Void) async rethrows -> Sample {
        // The loops' threads are read outside the round: reading /proc costs what it costs.
        let loopStart = threadTime(named: "tern.curl")
        let wallStart = DispatchTime.now().uptimeNanoseconds
        let cpuStart = clock()
        try await body()
        let wall = Double(DispatchTime.now().uptimeNanoseconds - wallStart)
        let cpu = Double(clock() - cpuStart) / Double(CLOCKS_PER_SEC) * 1e9
        let loop = threadTime(named: "tern.curl") - loopStart
        return Sample(wall: wall / Double(count), cpu: cpu / Double(count), loop: loop / Double(count))
    }

    /// Runs `rounds` rounds of each workload, `count` requests a round, alternating which goes
    /// first, after two rounds of warm-up; prints the medians and their ratio.
    public static func compare(
        _ name: String,
        against baseline: String,
        count: Int,
        rounds: Int,
        _ measured: () async throws -> Void,
        _ reference: () async throws -> Void
    ) async rethrows {
        var ours: [Sample] = []
        var theirs: [Sample] = []
        for round in 0..<rounds + 2 {
            let pair: (Sample, Sample)
            if round.isMultiple(of: 2) {
                let first = try await measure(count, measured)
                pair = (first, try await measure(count, reference))
            } else {
                let first = try await measure(count, reference)
                pair = (try await measure(count, measured), first)
            }
            if round >= 2 { ours.append(pair.0); theirs.append(pair.1) }
        }
        let wall = (median(ours.map(\.wall)), median(theirs.map(\.wall)))
        let cpu = (median(ours.map(\.cpu)), median(theirs.map(\.cpu)))
        print("\(name): \(Int(wall.0)) ns wall, \(Int(cpu.0)) ns CPU per request (median of \(rounds) rounds of \(count))")
        print("\(baseline): \(Int(wall.1)) ns wall, \(Int(cpu.1)) ns CPU per request")
        print(String(format: "ratio: %.3f wall, %.3f CPU", wall.0 / wall.1, cpu.0 / cpu.1))
        // Each round against the one beside it: the spread shows how noisy the machine was.
        let pairs = zip(ours, theirs).map { $0.cpu / $1.cpu }.sorted()
        print(String(format: "round-by-round CPU ratios: p25 %.3f  p50 %.3f  p75 %.3f",
                     pairs[pairs.count / 4], pairs[pairs.count / 2], pairs[3 * pairs.count / 4]))
    }

    /// A side's medians as ratios to the baseline's: its throughput, and its CPU per request.
    public struct Ratios: Sendable {
        public let name: String
        public let throughput: Double
        public let cpu: Double
    }

    /// Runs `rounds` rounds of each side, `count` requests a round, each round starting with the
    /// next side in turn, after two rounds of warm-up; prints each side's medians and its ratios
    /// to the first side's, the baseline, and returns those ratios.
    @discardableResult
    public static func compare(count: Int, rounds: Int, _ sides: [(name: String, body: () async throws -> Void)]) async throws -> [Ratios] {
        var samples = Array(repeating: [Sample](), count: sides.count)
        for round in 0..<rounds + 2 {
            for offset in 0..<sides.count {
                let index = (round + offset) % sides.count
                let sample = try await measure(count, sides[index].body)
                if round >= 2 { samples[index].append(sample) }
            }
        }
        let baseline = (wall: median(samples[0].map(\.wall)), cpu: median(samples[0].map(\.cpu)))
        let width = sides.map(\.name.count).max() ?? 0
        var ratios: [Ratios] = []
        for (side, measured) in zip(sides, samples) {
            let wall = median(measured.map(\.wall))
            let cpu = median(measured.map(\.cpu))
            let loop = median(measured.map(\.loop))
            // Each round against the baseline's in the same turn, seconds apart: steadier than
            // the ratio of medians when the machine's speed drifts between turns.
            let paired = zip(measured, samples[0]).map { $0.cpu / $1.cpu }.sorted()
            print(String(format: "%@: %6.0f req/s, %6.0f ns CPU per request: %.2fx throughput, %.2fx CPU of %@",
                         side.name.padding(toLength: width, withPad: " ", startingAt: 0), 1e9 / wall, cpu,
                         baseline.wall / wall, cpu / baseline.cpu, sides[0].name)
                  + (loop > cpu / 50 ? String(format: "; libcurl loop thread %.0f ns", loop) : "")
                  + (paired.count >= 4 && side.name != sides[0].name
                     ? String(format: "; round by round %.2fx (p25 %.2fx, p75 %.2fx)", paired[paired.count / 2],
                              paired[paired.count / 4], paired[3 * paired.count / 4]) : ""))
            ratios.append(Ratios(name: side.name, throughput: baseline.wall / wall, cpu: cpu / baseline.cpu))
        }
        return ratios
    }

    /// The middle value.
    public static func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
}
