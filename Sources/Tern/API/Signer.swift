/// An API's delegate, with the refresh coordinator that every API it signs for shares: their
/// requests refused at once wait for one refresh, not one for each API. Read together, once per
/// stage, so that a delegate changed while a request runs changes both.
struct Signer: Sendable {
    let delegate: any APIDelegate
    let refresher: RefreshCoordinator

    init(_ delegate: any APIDelegate) {
        self.delegate = delegate
        refresher = .of(delegate)
    }

    /// A promise that settles when credentials newer than `generation` are current (see
    /// ``RefreshCoordinator/refresh(signedWith:api:delegate:)``); the refresh, if one starts,
    /// runs for `api`.
    func refresh(signedWith generation: Int, for api: AbstractAPI) -> Promise<Void> {
        refresher.refresh(signedWith: generation, api: api, delegate: delegate)
    }
}
