/// ControlRequest's JSONDecoder reading. The synthesized one requires every associated value
/// that is not optional, default or not, so `{"evict":{"names":[…]}}` (to_disk left out, as
/// docs/protocol.md allows) would be refused. `Wire` is it with those members optional; its
/// cases and labels are the request's own, so keys, the one-member rule and the decoding
/// errors (`refusal`'s words) stay the synthesized ones. Encoding stays synthesized.
extension ControlRequest {
    package init(from decoder: any Decoder) throws {
        switch try Wire(from: decoder) {
        case .ping: self = .ping
        case .version: self = .version
        case .launch(let options): self = .launch(options: options)
        case .ps(let all, let brief): self = .ps(all: all, brief: brief)
        case .suspend(let names, let grace): self = .suspend(names: names, graceNanos: grace)
        case .resume(let names, let waitReady): self = .resume(names: names, waitReady: waitReady)
        case .switchTo(let name): self = .switchTo(name: name)
        case .terminate(let names, let timeout): self = .terminate(names: names, timeoutNanos: timeout)
        case .evict(let names, let toDisk): self = .evict(names: names, toDisk: toDisk ?? false)
        case .relaunch(let name): self = .relaunch(name: name)
        case .compact(let names, let mode): self = .compact(names: names, mode: mode)
        case .policy: self = .policy
        case .setPolicy(let settings): self = .setPolicy(settings: settings)
        case .stop(let terminateApps, let timeout): self = .stop(terminateApps: terminateApps, timeoutNanos: timeout)
        case .forget(let names): self = .forget(names: names)
        case .metrics(let format): self = .metrics(format: format)
        case .adopt(let options): self = .adopt(options: options)
        case .release(let name): self = .release(name: name)
        }
    }

    /// The requests as they are read: ControlRequest's cases, a member that may be left out
    /// optional here. A new request goes in both (ProtocolCodingTests round-trips every one).
    private enum Wire: Decodable {
        case ping
        case version
        case launch(options: LaunchOptions)
        case ps(all: Bool, brief: Bool)
        case suspend(names: [String], graceNanos: UInt64?)
        case resume(names: [String], waitReady: Bool)
        case switchTo(name: String)
        case terminate(names: [String], timeoutNanos: UInt64?)
        case evict(names: [String], toDisk: Bool?)
        case relaunch(name: String)
        case compact(names: [String], mode: CompactionMode?)
        case policy
        case setPolicy(settings: [PolicySetting])
        case stop(terminateApps: Bool, timeoutNanos: UInt64?)
        case forget(names: [String])
        case metrics(format: MetricsFormat)
        case adopt(options: AdoptOptions)
        case release(name: String)
    }
}
